/*
 * A real host in a child process, driven by one command per stdin line and answering one line each
 * on stdout (tests/lease-host.child.ts, tests/repair-host.child.ts): `ready <pid> [words…]` once
 * booted, then `ok <command> [words…]` or `err <command> <code> <message>` per command.
 */
import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'

export interface Answer {
  ok: boolean
  code?: string
  message: string
  /** The first word after `ok <command>` as a number, when it is one (e.g. an appended seq). */
  seq?: number
  /** The words after `ok <command>`. */
  words: string[]
}

export class HostProcess {
  readonly child: ChildProcess
  private lines: string[] = []
  private waiters: ((line: string) => void)[] = []
  private output = ''

  constructor(script: string, args: string[]) {
    this.child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', script, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, TASKWARD_LOG_LEVEL: 'warn' },
    })
    let partial = ''
    this.child.stdout!.on('data', (chunk) => {
      this.output += chunk
      partial += chunk
      const lines = partial.split('\n')
      partial = lines.pop()!
      for (const line of lines) {
        // Log lines (warnings) share stdout; answers start with a verb.
        if (!/^(ready|ok|err) /.test(line)) continue
        const waiter = this.waiters.shift()
        if (waiter) waiter(line)
        else this.lines.push(line)
      }
    })
    this.child.stderr!.on('data', (chunk) => this.output += chunk)
  }

  get pid() {
    return this.child.pid!
  }

  private next(timeout = 60_000): Promise<string> {
    const line = this.lines.shift()
    if (line !== undefined) return Promise.resolve(line)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer from host ${this.pid}; output:\n${this.output}`)), timeout)
      this.waiters.push((answer) => { clearTimeout(timer); resolve(answer) })
    })
  }

  /** Wait for `ready <pid> …`; returns the words after the pid. */
  async ready(): Promise<string[]> {
    const [verb, pid, ...words] = (await this.next()).split(' ')
    expect(`${verb} ${pid}`).to.equal(`ready ${this.pid}`)
    return words
  }

  async send(command: string, timeout?: number): Promise<Answer> {
    this.child.stdin!.write(command + '\n')
    const line = await this.next(timeout)
    const ok = /^ok \w+(?: (.*))?$/.exec(line)
    if (ok) {
      const words = ok[1] === undefined ? [] : ok[1].split(' ')
      return { ok: true, message: line, words, seq: /^\d+$/.test(words[0] ?? '') ? Number(words[0]) : undefined }
    }
    const err = /^err \w+ (\w+) (.*)$/.exec(line)
    if (!err) throw new Error(`unexpected answer from host ${this.pid}: ${line}`)
    return { ok: false, code: err[1], message: err[2], words: [] }
  }

  /** Whatever the host printed (for a failure message). */
  get log() {
    return this.output
  }

  /** SIGKILL (a stopped one dies too); resolves once it exited. */
  async kill() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.kill('SIGKILL')
    await exited
  }
}
