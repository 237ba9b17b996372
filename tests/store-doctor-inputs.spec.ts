import { expect } from 'chai'
import { spawn, spawnSync } from 'node:child_process'
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatFindings, nodeFinding } from '@taskward/host'
import { assertNodeRunnableBy, NOBODY, tempWorkspace, removeTree } from '@taskward/testkit'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/**
 * Whether `uid` can run this checkout's scripts at all: a checkout only root can enter (mode 700, say)
 * cannot be run as another user, so the permission cases cannot be tried there.
 */
function canRunAs(uid: number): boolean {
  // The Node itself must be runnable by `uid` (a failure, saying why); the checkout may not be (a skip).
  assertNodeRunnableBy(uid)
  const probe = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(join(ROOT, 'node_modules', 'tsx', 'package.json'))})`],
    { cwd: '/', uid, gid: uid, stdio: 'ignore' })
  return probe.status === 0
}

/**
 * `npm run doctor` on whatever a newcomer points it at. `as` runs the script itself (what `npm run
 * doctor` runs) under another uid, for the permission cases when the suite runs as root.
 */
function doctor(dataDir: string, options: { as?: number } = {}): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve) => {
    const child = options.as === undefined
      ? spawn('npm', ['run', '--silent', 'doctor', '--', '--data', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', 'scripts/doctor.ts', '--data', dataDir],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], uid: options.as, gid: options.as, env: { ...process.env, HOME: '/tmp' } })
    let output = ''
    child.stdout.on('data', (chunk) => output += chunk)
    child.stderr.on('data', (chunk) => output += chunk)
    child.on('exit', (code) => resolve({ code, output }))
  })
}

/** Every line is a verdict line, and no stack trace or uncaught error reached the terminal. */
function expectOnlyVerdicts(output: string) {
  const lines = output.trimEnd().split('\n')
  for (const line of lines) expect(line, output).to.match(/^(OK {2}|WARN|FAIL) {2}[\w ]+: \S/)
  // The Node line's verdict is the running Node's (Node 20: a WARN, end of life).
  expect(lines[0], output).to.equal(formatFindings([nodeFinding()]))
  expect(output).to.not.match(/^\s+at /m)
}

describe('store: npm run doctor on any data directory', function () {
  this.timeout(240_000)
  let base: string
  beforeEach(async () => { base = await tempWorkspace({}, 'taskward-doctor-inputs-') })
  afterEach(async () => {
    await chmod(base, 0o700).catch(() => {})
    for (const name of await readdir(base).catch(() => [])) await chmod(join(base, name), 0o700).catch(() => {})
    await removeTree(base)
  })

  it('a directory that does not exist yet: OK, says `npm start` creates it, and creates nothing', async () => {
    const data = join(base, 'not', 'yet')
    const { code, output } = await doctor(data)
    expect(code, output).to.equal(0)
    expectOnlyVerdicts(output)
    expect(output).to.include(`OK    data directory: ${data}: not created yet — \`npm start\` creates it`)
    expect(output).to.match(/^OK {4}database: .*taskward\.db: not created yet/m)
    expect(existsSync(join(base, 'not')), 'the doctor made a directory').to.equal(false)
  })

  it('an empty directory: OK, and it stays empty (the lock taken for the checks is gone)', async () => {
    const { code, output } = await doctor(base)
    expect(code, output).to.equal(0)
    expectOnlyVerdicts(output)
    expect(output).to.match(/^OK {4}data directory: .*no host running/m)
    expect(await readdir(base)).to.deep.equal([])
  })

  it('a file where the directory should be, or on the way to it: FAIL, exit 1', async () => {
    await writeFile(join(base, 'plain'), 'not a directory\n')
    const file = await doctor(join(base, 'plain'))
    expect(file.code, file.output).to.equal(1)
    expectOnlyVerdicts(file.output)
    expect(file.output).to.match(/^FAIL {2}data directory: .*plain is a file, not a directory/m)
    const below = await doctor(join(base, 'plain', 'data'))
    expect(below.code, below.output).to.equal(1)
    expectOnlyVerdicts(below.output)
    expect(below.output).to.match(/^FAIL {2}data directory: .*ENOTDIR/m)
  })

  it('a lock file that is a directory, a database that is a directory or empty: FAIL naming it, exit 1', async () => {
    await mkdir(join(base, 'taskward.db.lock'))
    const lock = await doctor(base)
    expect(lock.code, lock.output).to.equal(1)
    expectOnlyVerdicts(lock.output)
    expect(lock.output).to.match(/^FAIL {2}data directory: .*taskward\.db\.lock cannot be read \(EISDIR/m)
    await removeTree(join(base, 'taskward.db.lock'))

    await mkdir(join(base, 'taskward.db'))
    const directory = await doctor(base)
    expect(directory.code, directory.output).to.equal(1)
    expectOnlyVerdicts(directory.output)
    expect(directory.output).to.match(/^FAIL {2}database: STORE_CORRUPT: .*it is not a regular file/m)
    await removeTree(join(base, 'taskward.db'))

    await writeFile(join(base, 'taskward.db'), '')
    const empty = await doctor(base)
    expect(empty.code, empty.output).to.equal(1)
    expectOnlyVerdicts(empty.output)
    expect(empty.output).to.match(/^FAIL {2}database: STORE_CORRUPT: .*it is empty \(0 bytes\)/m)
    // Still only the file it found: no lock left behind.
    expect(await readdir(base)).to.deep.equal(['taskward.db'])
  })

  it('a host file that is not JSON: WARN, then the checks that need no host', async () => {
    await writeFile(join(base, 'taskward.host.json'), '{"pid": 1, "url": "http://127.0')
    const { code, output } = await doctor(base)
    expect(code, output).to.equal(0)
    expect(output).to.match(/^WARN {2}host: .*taskward\.host\.json is not valid JSON/m)
    expect(output).to.match(/^OK {4}data directory: .*no host running/m)
    expect(output).to.not.match(/^\s+at /m)
  })

  it('a directory this user cannot read, and a missing one it cannot create: FAIL saying so, exit 1', async function () {
    const root = process.getuid?.() === 0
    const as = root ? NOBODY : undefined
    // Run as root in a checkout nobody else may enter, the unprivileged doctor cannot even start.
    if (as !== undefined && !canRunAs(as)) return this.skip()
    const locked = join(base, 'locked')
    await mkdir(locked)
    await chmod(locked, 0o000)
    // The doctor (as nobody, when root) must reach the base directory to get as far as `locked`.
    await chmod(base, 0o755)
    const unreadable = await doctor(locked, { as })
    expect(unreadable.code, unreadable.output).to.equal(1)
    expectOnlyVerdicts(unreadable.output)
    expect(unreadable.output).to.match(/^FAIL {2}data directory: .*locked cannot be read and written by this user \(EACCES/m)

    const readOnly = join(base, 'read-only')
    await mkdir(readOnly)
    await chmod(readOnly, 0o555)
    const uncreatable = await doctor(join(readOnly, 'data'), { as })
    expect(uncreatable.code, uncreatable.output).to.equal(1)
    expectOnlyVerdicts(uncreatable.output)
    expect(uncreatable.output).to.match(/^FAIL {2}data directory: .*read-only\/data does not exist and `npm start` cannot create it \(EACCES/m)
  })
})
