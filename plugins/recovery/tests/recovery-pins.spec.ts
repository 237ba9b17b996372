import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Schema from 'schemastery'
import { original, type Session } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { removeTree, tempWorkspace, type TestHost } from '@taskward/testkit'
import {
  allEvents, bootRecovery, call, command, ok, phase, readyTask, recoveryRecords, reviewsSettled, scriptReview, until,
} from './fixtures'

/** The checks' program lives in the workspace: `npm test` runs package.json's script, which runs test/. */
const PINNED_TEST = { id: 'test', argv: ['npm', 'test', '--silent'], timeoutMs: 60_000, pin: ['test/**'] }

const workspace = () => tempWorkspace({
  'answer.txt': 'alpha',
  'package.json': JSON.stringify({ name: 'answers', private: true, scripts: { test: 'node test/answer.test.js' } }, null, 2),
  'test/answer.test.js': "const fs = require('fs')\nconst answer = fs.readFileSync('answer.txt', 'utf8').trim()\n"
    + "if (answer !== 'right') { console.log('wrong answer: ' + answer); process.exit(1) }\n",
  'test/helper.js': 'module.exports = 1\n',
})

/** Pinned checks through a real host: the agent cannot make the check pass by editing the check. */
describe('recovery: pinned checks', function () {
  this.timeout(60_000)
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    host = await bootRecovery({ checks: [PINNED_TEST], sandbox: 'copy' })
    cwd = await workspace()
    registerShell(host)
  })

  /** A test-only tool that is not a file tool: what a shell or another process could do. */
  function registerShell(host: TestHost) {
    host.ctx.tools.register({
      name: 'shell',
      description: 'Run a shell command in the session directory (test only).',
      parameters: Schema.object({ command: Schema.string().required() }),
      execute: ({ command }: { command: string }, { session }) => new Promise((resolve) => {
        execFile('sh', ['-c', command], { cwd: session.cwd }, (error, stdout, stderr) => resolve({ exit: error ? 1 : 0, stdout, stderr }))
      }),
    })
  }
  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    if (cwd) await removeTree(cwd)
  })

  async function runAgent(session: Session, steps: object[]) {
    host.scripted.script('main', steps as any)
    const agent = host.ctx.agents.get(session.id)!
    agent.followup('Finish the task.', { origin: 'user' })
    await agent.whenIdle()
    await host.ctx.recovery.settled()
  }

  async function toolResults(session: Session, name: string) {
    return (await allEvents(session)).filter((e) => e.type === 'tool/result' && e.data.name === name).map((e) => e.data)
  }

  async function expectStoppedOnPin(session: Session, path: string, change: string) {
    await until(async () => (await phase(host, session)).phase === 'paused', 'the pin STOP to pause the task')
    const task = await phase(host, session)
    expect(task).to.include({ phase: 'paused', pauseReason: 'recovery' })
    const decisions = await recoveryRecords(session, 'decision')
    expect(decisions.at(-1)!.payload).to.include({ action: 'STOP', stopReason: 'pin_changed', reason: 'CHECK_PIN_CHANGED', verdict: 'INCONCLUSIVE' })
    const attempt = (await recoveryRecords(session, 'attempt')).at(-1)!.payload
    const [check] = attempt.checks
    expect(check).to.include({ checkId: 'test', verdict: 'INCONCLUSIVE', reason: 'pin_changed' })
    expect(check.pinChanges).to.deep.include({ path, change })
    expect(check.outputExcerpt).to.include(path)
    // Never completed: no completion review was even requested.
    const state = await host.ctx.supervisor.state(session)
    expect(state.reviews.some((job) => job.kind === 'completion')).to.equal(false)
  }

  it('guards pins again after the supervisor was unloaded and loaded again, through the new supervisor (never a stale one)', async () => {
    const { session } = await readyTask(host, cwd)
    const write = () => call(host, session, 'write', { path: 'test/helper.js', content: 'module.exports = 2\n' })
    expect((await write()).error?.code).to.equal('CHECK_PINNED')
    const before = original(host.ctx.recovery)
    // Recovery injects the supervisor as required: it stops with it, and starts again once it is back.
    ;(host.ctx as any).registry.get(SupervisorPlugin).dispose()
    await until(() => !host.ctx.get('recovery'), 'recovery to stop with the supervisor')
    host.ctx.plugin(SupervisorPlugin, { automaticContinuation: false })
    await until(() => !!host.ctx.get('supervisor') && !!host.ctx.get('recovery'), 'the supervisor and recovery to come back')
    const after = original(host.ctx.recovery)
    expect(after).to.not.equal(before)
    expect(after.kernel.supervisor).to.equal(original(host.ctx.supervisor))
    expect(after.kernel.supervisor).to.not.equal(before.kernel.supervisor)
    expect((await write()).error?.code).to.equal('CHECK_PINNED')
    expect(await readFile(join(cwd, 'test/helper.js'), 'utf8')).to.equal('module.exports = 1\n')
  })

  it('stamps the pinned set when the task becomes active: package.json (implied by npm) and test/**', async () => {
    const { session, task } = await readyTask(host, cwd)
    const [pins] = await recoveryRecords(session, 'pins')
    expect(pins.payload).to.include({ taskId: task.id, reason: 'task-start' })
    expect(pins.payload.files.map((file: { path: string }) => file.path)).to.deep.equal(['package.json', 'test/answer.test.js', 'test/helper.js'])
    const shown = await command(host, session, '/task checks')
    expect(shown.pins).to.deep.equal([{ checkId: 'test', patterns: ['test/**', 'package.json'] }])
    expect(shown.changed).to.deep.equal([])
  })

  it('an agent that rewrites the test script: the write tool refuses with CHECK_PINNED, a shell rewrite stops the task (pin_changed)', async () => {
    const { session } = await readyTask(host, cwd)
    const cheat = JSON.stringify({ name: 'answers', private: true, scripts: { test: 'exit 0' } })
    await runAgent(session, [
      { toolCalls: [{ name: 'write', args: { path: 'package.json', content: cheat } }] },
      { toolCalls: [{ name: 'edit', args: { path: './test/../package.json', old: 'node test/answer.test.js', new: 'exit 0' } }] },
      { toolCalls: [{ name: 'shell', args: { command: `printf '%s' '${cheat}' > package.json` } }] },
      { toolCalls: [{ name: 'task_request_completion', args: { summary: 'all tests pass' } }] },
      { text: 'done' },
    ])
    const [write] = await toolResults(session, 'write')
    expect(write.error.code).to.equal('CHECK_PINNED')
    expect(write.error.message).to.include('"package.json"').and.include('check "test"')
    const [edit] = await toolResults(session, 'edit')
    expect(edit.error.code).to.equal('CHECK_PINNED')
    const [completion] = await toolResults(session, 'task_request_completion')
    expect(completion.error.code).to.equal('CHECK_PINNED')
    expect(completion.error.message).to.include('pin_changed')
    await expectStoppedOnPin(session, 'package.json', 'modified')
  })

  it('an agent that deletes a test file through a non-file tool never completes', async () => {
    const { session } = await readyTask(host, cwd)
    await runAgent(session, [
      { toolCalls: [{ name: 'write', args: { path: 'test/answer.test.js', content: '' } }] },
      { toolCalls: [{ name: 'shell', args: { command: 'rm test/answer.test.js' } }] },
      { toolCalls: [{ name: 'task_request_completion', args: { summary: 'done' } }] },
      { text: 'done' },
    ])
    expect((await toolResults(session, 'write'))[0].error.code).to.equal('CHECK_PINNED')
    await expectStoppedOnPin(session, 'test/answer.test.js', 'deleted')
  })

  it('a pinned file changed outside the tools between steps: the stage report stops the task; /task checks accept and resume let it finish', async () => {
    const { session } = await host.ctx.supervisor.startSession({ cwd })
    await command(host, session, '/task new get the answer right')
    scriptReview(host, 'pass')
    await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['answer is right'], nodes: [{ id: 'a', title: 'answer' }] })
    await reviewsSettled(host, session)
    await command(host, session, '/task approve')
    await host.ctx.recovery.settled()
    await ok(host, session, 'task_start_node', { nodeId: 'a' })
    // Another process adds a test file that always passes... and the stage report is verified.
    await writeFile(join(cwd, 'test', 'extra.test.js'), 'process.exit(0)\n')
    scriptReview(host, 'pass')
    await ok(host, session, 'task_report_stage', { nodeId: 'a' })
    await reviewsSettled(host, session)
    await expectStoppedOnPin(session, 'test/extra.test.js', 'added')
    const shown = await command(host, session, '/task checks')
    expect(shown.changed).to.deep.equal([{ path: 'test/extra.test.js', change: 'added' }])

    // The person looks at it and accepts it; the agent then fixes the answer and completes.
    const accepted = await command(host, session, '/task checks accept')
    expect(accepted.accepted).to.include('test/extra.test.js')
    expect((await recoveryRecords(session, 'pins')).at(-1)!.payload.reason).to.equal('accepted')
    await command(host, session, '/task resume')
    await ok(host, session, 'write', { path: 'answer.txt', content: 'right' })
    scriptReview(host, 'pass')
    await ok(host, session, 'task_request_completion', { summary: 'answer fixed' })
    await reviewsSettled(host, session)
    expect((await phase(host, session)).phase).to.equal('complete')
  })

  it('an unpinned edit still works, and completion passes on the unchanged pins', async () => {
    const { session } = await readyTask(host, cwd)
    scriptReview(host, 'pass')
    await runAgent(session, [
      { toolCalls: [{ name: 'write', args: { path: 'answer.txt', content: 'right' } }] },
      { toolCalls: [{ name: 'task_request_completion', args: { summary: 'answer fixed' } }] },
      { text: 'done' },
    ])
    await reviewsSettled(host, session)
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('right')
    expect((await toolResults(session, 'write'))[0].error).to.equal(undefined)
    expect((await phase(host, session)).phase).to.equal('complete')
    const decisions = await recoveryRecords(session, 'decision')
    expect(decisions.at(-1)!.payload).to.include({ action: 'COMPLETE' })
  })

  it('write tools refuse every spelling of a pinned path, new files under a pinned glob and writes through a symlink', async () => {
    const { session } = await readyTask(host, cwd)
    await ok(host, session, 'shell', { command: 'ln -s package.json alias.json' })
    // Absolute spellings too, as DSH's file tools take them (inside the workspace, or through its real path).
    const real = await realpath(cwd)
    for (const path of ['package.json', './package.json', 'test/../package.json', 'test//helper.js', 'test/new.test.js', 'alias.json',
      join(cwd, 'package.json'), join(real, 'test', 'answer.test.js'), join(cwd, 'test', '..', 'alias.json')]) {
      const outcome = await call(host, session, 'write', { path, content: 'x' })
      expect(outcome.error?.code, path).to.equal('CHECK_PINNED')
    }
    expect(JSON.parse(await readFile(join(cwd, 'package.json'), 'utf8')).scripts.test).to.equal('node test/answer.test.js')
    // Reading stays allowed; and the pins close only while the task lives.
    expect((await call(host, session, 'read', { path: 'package.json' })).error).to.equal(undefined)
  })

  it('only a person sets pins: /task checks with a pin list re-stamps, and a pin leaving the workspace is refused', async () => {
    const { session } = await readyTask(host, cwd)
    const answer = await host.ctx.commands.input(session, `/task checks ${JSON.stringify([{ ...PINNED_TEST, pin: ['../outside'] }])}`)
    expect(answer?.error?.code).to.equal('PATTERN_REJECTED')
    await rm(join(cwd, 'test', 'helper.js'))
    await command(host, session, `/task checks ${JSON.stringify([{ ...PINNED_TEST, pin: ['test/*.test.js'] }])}`)
    const pins = (await recoveryRecords(session, 'pins')).at(-1)!.payload
    expect(pins.reason).to.equal('checks-set')
    expect(pins.files.map((file: { path: string }) => file.path)).to.deep.equal(['package.json', 'test/answer.test.js'])
    // test/helper.js is no longer pinned: writing it is allowed.
    expect((await call(host, session, 'write', { path: 'test/helper.js', content: 'module.exports = 2\n' })).error).to.equal(undefined)
  })

  it('a consultation working for the main session (same workspace) is refused pinned paths too', async () => {
    const { session } = await readyTask(host, cwd)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    const outcome = await call(host, consultation, 'write', { path: 'test/answer.test.js', content: 'process.exit(0)\n' })
    expect(outcome.error?.code).to.equal('CHECK_PINNED')
    expect(outcome.error?.message).to.include(`of task ${(await phase(host, session)).id}`)
    expect(await readFile(join(cwd, 'test', 'answer.test.js'), 'utf8')).to.match(/wrong answer/)
    // Its unpinned writes still work.
    expect((await call(host, consultation, 'write', { path: 'notes.txt', content: 'fine' })).error).to.equal(undefined)
  })

  it('a sub-agent a consultation started (its parent: the consultation) is refused pinned paths too', async () => {
    const { session } = await readyTask(host, cwd)
    const consultation = await host.ctx.sessions.create({ cwd, role: 'consultation', parentId: session.id })
    const child = await host.ctx.sessions.create({ cwd, role: 'subagent', parentId: consultation.id })
    const outcome = await call(host, child, 'write', { path: 'test/answer.test.js', content: 'process.exit(0)\n' })
    expect(outcome.error?.code).to.equal('CHECK_PINNED')
    expect(outcome.error?.message).to.include(`of task ${(await phase(host, session)).id}`)
    expect(await readFile(join(cwd, 'test', 'answer.test.js'), 'utf8')).to.match(/wrong answer/)
    expect((await call(host, child, 'write', { path: 'notes.txt', content: 'fine' })).error).to.equal(undefined)
  })

  it('a pinned file that is a symlink: its target is guarded and stamped by content, so editing the target never passes', async () => {
    // Git mode (a workspace stamp refuses symlinks outright): test/answer.test.js is a committed link to an
    // unpinned file, and the check runs the target's content.
    await host.dispose()
    host = await bootRecovery({ checks: [PINNED_TEST], sandbox: 'copy', candidateSource: 'git' })
    registerShell(host)
    const body = await readFile(join(cwd, 'test', 'answer.test.js'), 'utf8')
    await rm(join(cwd, 'test', 'answer.test.js'))
    await writeFile(join(cwd, 'answer-check.js'), body)
    await symlink('../answer-check.js', join(cwd, 'test', 'answer.test.js'))
    const git = "git -c user.name=T -c user.email=t@t.invalid -c commit.gpgsign=false -c core.hooksPath=/dev/null"
    await new Promise((resolve, reject) => execFile('sh', ['-c', `git init -q -b main && ${git} add -A && ${git} commit -q -m base`], { cwd }, (error) => error ? reject(error) : resolve(undefined)))
    const { session } = await readyTask(host, cwd)
    const refused = await call(host, session, 'write', { path: 'answer-check.js', content: 'process.exit(0)\n' })
    expect(refused.error?.code).to.equal('CHECK_PINNED')
    expect(refused.error?.message).to.include('test/answer.test.js')
    // Through a shell, committed so the candidate is a clean HEAD.
    await runAgent(session, [
      { toolCalls: [{ name: 'shell', args: { command: `printf 'process.exit(0)\\n' > answer-check.js && ${git} commit -qam cheat` } }] },
      { toolCalls: [{ name: 'task_request_completion', args: { summary: 'all tests pass' } }] },
      { text: 'done' },
    ])
    expect(await readFile(join(cwd, 'answer-check.js'), 'utf8')).to.equal('process.exit(0)\n')
    await expectStoppedOnPin(session, 'test/answer.test.js', 'modified')
  })

  it('a path that goes up through a symlink is judged where the file tools would write it, not lexically', async () => {
    // fx leads into test/sub, so fx/../answer.test.js is test/answer.test.js (the kernel follows the link first).
    await new Promise((resolve) => execFile('sh', ['-c', 'mkdir -p test/sub && ln -s test/sub fx'], { cwd }, resolve))
    const { session } = await readyTask(host, cwd)
    for (const path of ['fx/../answer.test.js', 'fx/../new.test.js', 'fx/../newdir/x.test.js', './fx/../answer.test.js']) {
      const outcome = await call(host, session, 'write', { path, content: 'process.exit(0)\n' })
      expect(outcome.error?.code, path).to.equal('CHECK_PINNED')
    }
    expect(await readFile(join(cwd, 'test', 'answer.test.js'), 'utf8')).to.match(/wrong answer/)
    expect(existsSync(join(cwd, 'test', 'new.test.js'))).to.equal(false)
    expect(existsSync(join(cwd, 'test', 'newdir'))).to.equal(false)
  })

  it('an absolute path is judged where the kernel writes it: up through a symlink, or back in through a link outside the workspace', async () => {
    // DSH's file tools write any absolute path: fx/../ lands in test/ (fx leads into test/sub; spelled
    // as a string, since join() would fold it lexically), and a link outside the workspace leads back into it.
    await new Promise((resolve) => execFile('sh', ['-c', 'mkdir -p test/sub && ln -s test/sub fx'], { cwd }, resolve))
    const outside = await tempWorkspace({})
    try {
      await symlink(cwd, join(outside, 'alias'))
      const { session } = await readyTask(host, cwd)
      for (const path of [`${cwd}/fx/../answer.test.js`, `${cwd}/fx/../new.test.js`, join(outside, 'alias', 'test', 'answer.test.js'),
        join(outside, 'alias', 'package.json')]) {
        const outcome = await call(host, session, 'write', { path, content: 'process.exit(0)\n' })
        expect(outcome.error?.code, path).to.equal('CHECK_PINNED')
      }
      expect(await readFile(join(cwd, 'test', 'answer.test.js'), 'utf8')).to.match(/wrong answer/)
    } finally {
      await removeTree(outside)
    }
  })

  it('an absolute path to a pinned name that starts with two dots (..settings) is inside the workspace, and refused', async () => {
    await writeFile(join(cwd, '..settings'), 'pinned\n')
    const { session } = await readyTask(host, cwd, [{ ...PINNED_TEST, pin: ['..settings'] }])
    const outcome = await call(host, session, 'write', { path: join(cwd, '..settings'), content: 'changed\n' })
    expect(outcome.error?.code).to.equal('CHECK_PINNED')
    expect(await readFile(join(cwd, '..settings'), 'utf8')).to.equal('pinned\n')
  })
})
