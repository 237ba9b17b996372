import { expect } from 'chai'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Config, dataDirectory } from '../src'

describe('database plugin: config', () => {
  it('defaults to a SQLite file named taskward.db', () => {
    expect(Config({})).to.deep.include({ driver: 'sqlite', path: 'taskward.db' })
  })

  it('takes MySQL/MariaDB settings with defaults', () => {
    expect(Config({ driver: 'mysql', database: 'tw' } as any)).to.deep.include({ driver: 'mysql', host: '127.0.0.1', port: 3306, database: 'tw' })
  })

  it('refuses an unknown driver at load', () => {
    expect(() => Config({ driver: 'postgres' } as any)).to.throw()
  })

  it('puts the data directory where TASKWARD_DATA says, ./data otherwise', () => {
    expect(dataDirectory({ TASKWARD_DATA: '/srv/taskward' })).to.equal('/srv/taskward')
    expect(dataDirectory({})).to.equal(join(process.cwd(), 'data'))
  })
})

describe('database plugin: SQLite file', () => {
  it('creates the data directory when it is missing', async () => {
    const { TestHost } = await import('@taskward/testkit')
    const parent = await mkdtemp(join(tmpdir(), 'taskward-db-'))
    const nested = join(parent, 'a', 'b')
    const host = await TestHost.boot({ database: { driver: 'sqlite', path: join(nested, 'store.db') } })
    try {
      const session = await host.ctx.sessions.create({ cwd: parent })
      await session.append('test/x', { ok: true })
      expect((await stat(join(nested, 'store.db'))).isFile()).to.equal(true)
    } finally {
      await host.dispose()
      await rm(parent, { recursive: true, force: true })
    }
  })
})
