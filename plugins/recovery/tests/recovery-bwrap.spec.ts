import { expect } from 'chai'
import { createServer, type Server } from 'node:net'
import { readFile } from 'node:fs/promises'
import { removeTree, type TestHost } from '@taskward/testkit'
import { answerWorkspace, bootRecovery, readyTask, requireBwrap, type RecoveryConfig } from './fixtures'

/*
 * The bwrap sandbox for real (CI installs bubblewrap; elsewhere these skip unless it is installed).
 * Each case runs the same check in copy mode too, so the test shows what bwrap adds and cannot pass
 * by accident.
 */
describe('recovery: the bwrap sandbox', function () {
  let host: TestHost | undefined
  let cwd: string | undefined
  let server: Server | undefined

  before(requireBwrap)
  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
    server?.close()
    host = cwd = server = undefined
  })

  async function verdictOf(argv: (cwd: string) => string[], config: RecoveryConfig) {
    await host?.dispose()
    if (cwd) await removeTree(cwd)
    host = await bootRecovery(config)
    cwd = await answerWorkspace('alpha')
    const { session, task } = await readyTask(host, cwd, [{ id: 'probe', argv: argv(cwd), timeoutMs: 20_000 }])
    const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    return { check: attempt.checks[0], answer: await readFile(`${cwd}/answer.txt`, 'utf8') }
  }

  it('keeps a check from writing the candidate even by its absolute path', async () => {
    const write = (root: string) => ['sh', '-c', `echo hacked > '${root}/answer.txt'`]
    const sandboxed = await verdictOf(write, { sandbox: 'bwrap' })
    expect(sandboxed.check.verdict).to.equal('FAIL')
    // Read-only host, and a private /tmp: the path is either read-only or not there at all.
    expect(sandboxed.check.outputExcerpt).to.match(/cannot create|Read-only file system/)
    expect(sandboxed.answer).to.equal('alpha')
    // Copy mode is not isolation: the same absolute write lands (docs/recovery.md says so).
    const copied = await verdictOf(write, { sandbox: 'copy' })
    expect(copied.answer).to.equal('hacked\n')
  })

  it('gives a check no capabilities, so a host running as root cannot be escaped by remounting the host read-write', async () => {
    // As root, bubblewrap keeps every capability unless told otherwise: with CAP_SYS_ADMIN a check
    // remounts the host read-write and unmounts the sandbox's private /tmp.
    const escape = (root: string) => ['sh', '-c', `grep CapEff /proc/self/status; mount -o remount,bind,rw / && umount -l /tmp && echo hacked > "${root}/answer.txt"`]
    const sandboxed = await verdictOf(escape, { sandbox: 'bwrap' })
    expect(sandboxed.check.outputExcerpt).to.match(/CapEff:\s+0+\n/)
    expect(sandboxed.check.verdict).to.equal('FAIL')
    expect(sandboxed.answer).to.equal('alpha')
  })

  it('gives a check no network, not even loopback', async () => {
    server = createServer((socket) => socket.end())
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    const connect = () => [process.execPath, '-e',
      `require('net').connect(${port}, '127.0.0.1').on('connect', () => process.exit(0)).on('error', (e) => { console.log(e.code); process.exit(3) })`]
    const sandboxed = await verdictOf(connect, { sandbox: 'bwrap' })
    expect(sandboxed.check.verdict).to.equal('FAIL')
    expect(sandboxed.check.exitCode).to.equal(3)
    const copied = await verdictOf(connect, { sandbox: 'copy' })
    expect(copied.check.verdict).to.equal('PASS')
  })
})
