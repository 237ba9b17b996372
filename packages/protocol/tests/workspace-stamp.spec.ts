import { expect } from 'chai'
import { compareStamps, requireSameStamp, sameStamp, TaskwardError, stampParts, versionChanges, WorkspaceStampSchema, type WorkspaceStamp } from '../src'

const stamp: WorkspaceStamp = { workspaceKey: 'a'.repeat(64), digest: 'b'.repeat(64), files: 3, bytes: 120 }

describe('workspace stamp comparison', () => {
  it('finds no difference between equal stamps', () => {
    expect(compareStamps(stamp, { ...stamp })).to.deep.equal([])
    expect(sameStamp(stamp, { ...stamp })).to.equal(true)
    expect(() => requireSameStamp(stamp, { ...stamp })).to.not.throw()
  })

  it('lists every differing field in a fixed order', () => {
    const other = { workspaceKey: 'c'.repeat(64), digest: 'd'.repeat(64), files: 4, bytes: 121 }
    expect(compareStamps(stamp, other)).to.deep.equal(['workspaceKey', 'digest', 'files', 'bytes'])
    expect(compareStamps(stamp, { ...stamp, bytes: 0 })).to.deep.equal(['bytes'])
    expect(sameStamp(stamp, { ...stamp, digest: 'e'.repeat(64) })).to.equal(false)
  })

  it('refuses a changed workspace with ARTIFACT_CHANGED, saying what to do', () => {
    const current = { ...stamp, digest: 'f'.repeat(64) }
    let caught: unknown
    try {
      requireSameStamp(stamp, current)
    } catch (error) {
      caught = error
    }
    expect(TaskwardError.is(caught, 'ARTIFACT_CHANGED')).to.equal(true)
    const error = caught as TaskwardError
    expect(error.details).to.deep.equal({ reason: 'stamp-mismatch', differences: ['digest'], expected: stamp, current })
    expect(error.message).to.contain('Propose the repair again')
  })

  it('says when the stamp belongs to another workspace', () => {
    expect(() => requireSameStamp(stamp, { ...stamp, workspaceKey: '0'.repeat(64) })).to.throw(/different workspace/)
  })

  it('validates stamps read back from records', () => {
    expect(WorkspaceStampSchema(stamp)).to.deep.equal(stamp)
    for (const bad of [{ ...stamp, digest: 'xyz' }, { ...stamp, files: -1 }, { ...stamp, bytes: 1.5 }, { digest: stamp.digest }]) {
      expect(() => WorkspaceStampSchema(bad as any)).to.throw()
    }
  })
})

describe('workspace entry versions', () => {
  const version = { dev: 1n, ino: 2n, mode: 0o100644n, size: 10n, mtimeNs: 100n, ctimeNs: 100n }

  it('reports which metadata changed between two looks at an entry', () => {
    expect(versionChanges(version, { ...version })).to.deep.equal([])
    expect(versionChanges(version, { ...version, size: 11n, mtimeNs: 101n })).to.deep.equal(['size', 'mtimeNs'])
    expect(versionChanges(version, { ...version, ino: 3n, ctimeNs: 200n })).to.deep.equal(['ino', 'ctimeNs'])
  })
})

describe('stampParts', () => {
  it('sets the workspace\'s own files apart from its dependency directories', () => {
    const dependencies = { entries: 40, files: 30, bytes: 900, links: 2 }
    expect(stampParts({ files: 33, bytes: 1000, links: 3, dependencies })).to.deep.equal({ own: { files: 3, bytes: 100, links: 1 }, dependencies })
  })

  it('reads a stamp from before links and dependency directories as all the workspace\'s own', () => {
    expect(stampParts(stamp)).to.deep.equal({ own: { files: 3, bytes: 120, links: 0 } })
  })

  it('round-trips the new fields through the record schema, and leaves them absent on old stamps', () => {
    const full = { ...stamp, links: 1, dependencies: { entries: 2, files: 1, bytes: 10, links: 1 } }
    expect(WorkspaceStampSchema(full)).to.deep.equal(full)
    expect(WorkspaceStampSchema(stamp)).to.deep.equal(stamp)
  })
})
