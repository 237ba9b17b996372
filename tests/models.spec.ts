/*
 * The Promela models in models/ checked exhaustively with spin (Debian package `spin`; scripts/test.sh
 * installs it). Each model is checked at its bounds and must have no counterexample; each deliberately
 * broken variant must have one — otherwise the properties could be vacuous. See docs/models-checked.md.
 */
import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const MODELS = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'models')
/** pan's search depth limit; a search that hits it is a failure, not a pass. */
const DEPTH = 20_000

interface Run {
  stdout: string
  stderr: string
  code: number
}

function run(cmd: string, args: string[], cwd: string, timeout = 120_000): Promise<Run> {
  return new Promise((resolvePromise) => {
    execFile(cmd, args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1) : 0
      resolvePromise({ stdout: String(stdout), stderr: String(stderr), code })
    })
  })
}

async function requireTool(name: string, hint: string) {
  const found = await run('sh', ['-c', `command -v ${name}`], tmpdir())
  if (found.code !== 0) throw new Error(`${name} is not installed: ${hint}`)
}

interface Verification {
  output: string
  errors: number
  states: number
  trail?: string
}

/**
 * spin -a, gcc pan.c (SAFETY: assertions and invalid end states; bounded state vector and memory),
 * pan -m<DEPTH>. gcc -O0 (compiling is most of the cost) except for the two large confirm searches.
 * On a counterexample the trail is replayed with `spin -t -p -g` for the report.
 */
async function verify(model: string, defines: string[], optimize = false): Promise<Verification> {
  const dir = await mkdtemp(join(tmpdir(), 'taskward-spin-'))
  try {
    await copyFile(join(MODELS, model), join(dir, model))
    const generate = await run('spin', [...defines, '-a', model], dir)
    if (generate.code !== 0) throw new Error(`spin -a ${model} failed:\n${generate.stdout}${generate.stderr}`)
    const compile = await run('gcc', [optimize ? '-O1' : '-O0', '-w', '-DSAFETY', '-DVECTORSZ=2048', '-DMEMLIM=1024', '-o', 'pan', 'pan.c'], dir)
    if (compile.code !== 0) throw new Error(`gcc pan.c for ${model} failed:\n${compile.stderr}`)
    const search = await run('./pan', [`-m${DEPTH}`], dir)
    const output = search.stdout + search.stderr
    if (/max search depth too small/.test(output)) throw new Error(`${model} ${defines.join(' ')}: the search hit depth ${DEPTH}; it proved nothing.\n${output}`)
    if (/out of memory|memory limit/i.test(output)) throw new Error(`${model} ${defines.join(' ')}: pan ran out of memory; the bounds are too large.\n${output}`)
    const errors = Number(/errors: (\d+)/.exec(output)?.[1] ?? NaN)
    if (Number.isNaN(errors)) throw new Error(`${model}: pan did not report a result:\n${output}`)
    const states = Number(/(\d+) states, stored/.exec(output)?.[1] ?? 0)
    let trail: string | undefined
    if (errors > 0) {
      const replay = await run('spin', [...defines, '-t', '-p', '-g', model], dir)
      trail = (replay.stdout + replay.stderr).split('\n').slice(-200).join('\n')
    }
    return { output, errors, states, ...trail ? { trail } : {} }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Two verifications at a time (the machine has two cores); every run starts in `before`, tests await theirs. */
const queue: (() => void)[] = []
let active = 0
function limited<T>(work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolvePromise, reject) => {
    const start = () => {
      active++
      work().then(resolvePromise, reject).finally(() => {
        active--
        queue.shift()?.()
      })
    }
    if (active < 2) start()
    else queue.push(start)
  })
}

const RUNS = {
  confirmUser: ['confirm.pml', ['-DCLICKS=1', '-DCRASHES=1'], true],
  confirmClicks: ['confirm.pml', ['-DCLICKS=2', '-DWITHOUT_USER', '-DCRASHES=1'], true],
  confirmNoSeq: ['confirm.pml', ['-DCLICKS=2', '-DWITHOUT_USER', '-DNO_SEQ_CHECK'], false],
  confirmNoRecheck: ['confirm.pml', ['-DCLICKS=1', '-DNO_RECHECK'], false],
  confirmNeverFinishes: ['confirm.pml', ['-DCLICKS=1', '-DCONFIRMED_IS_APPLIED'], false],
  journal: ['journal.pml', ['-DROUNDS=5', '-DCRASHES=4'], false],
  journalNoReconcile: ['journal.pml', ['-DNO_RECONCILE'], false],
  journalNoLegality: ['journal.pml', ['-DNO_LEGALITY'], false],
} satisfies Record<string, [string, string[], boolean]>

const results = new Map<keyof typeof RUNS, Promise<Verification>>()
function verification(name: keyof typeof RUNS): Promise<Verification> {
  if (!results.has(name)) {
    const [model, defines, optimize] = RUNS[name]
    const started = limited(() => verify(model, defines, optimize))
    started.catch(() => undefined) // awaited by its test; never an unhandled rejection meanwhile
    results.set(name, started)
  }
  return results.get(name)!
}

function expectNoCounterexample(result: Verification, what: string) {
  if (result.errors > 0) {
    throw new Error(`${what}: spin found a counterexample.\n${/pan:1: .*/.exec(result.output)?.[0] ?? ''}\nTrail (spin -t -p -g, last lines):\n${result.trail}`)
  }
  expect(result.states, `${what}: states explored`).to.be.greaterThan(1000)
}

function expectCounterexample(result: Verification, assertion: RegExp, what: string) {
  expect(result.errors, `${what}: the broken variant must have a counterexample, or the property is vacuous\n${result.output}`).to.be.greaterThan(0)
  expect(result.output).to.match(assertion)
  expect(result.trail, 'the trail is replayed').to.match(/proc/)
}

/** The statements pan never reached in one proctype (from its "unreached in proctype X" report). */
function unreached(output: string, proctype: string): string {
  const start = output.indexOf(`unreached in proctype ${proctype}`)
  if (start < 0) return ''
  const rest = output.slice(start + 1)
  const end = rest.indexOf('unreached in')
  return end < 0 ? rest : rest.slice(0, end)
}

describe('models: the confirm protocol and the candidate journal, checked with spin', function () {
  this.timeout(120_000)

  before(async () => {
    await requireTool('spin', 'install Debian\'s "spin" package (apt-get install -y spin; scripts/test.sh does). The model checks cannot be skipped.')
    await requireTool('gcc', 'install gcc to compile spin\'s verifier.')
    for (const name of Object.keys(RUNS) as (keyof typeof RUNS)[]) verification(name)
  })

  describe('confirm (models/confirm.pml)', () => {
    it('two hosts, one click each, a decline and a superseding proposal meanwhile, one SIGKILL anywhere: no counterexample', async () => {
      const result = await verification('confirmUser')
      expectNoCounterexample(result, 'confirm, 1 click per host with the user')
      // Not vacuous: the last click after the crashes does complete an interrupted confirm (its reopen is reached).
      expect(unreached(result.output, 'Finisher')).to.not.include('status[p] = 3')
    })

    it('two hosts, two concurrent clicks each, one SIGKILL anywhere: no counterexample', async () => {
      const result = await verification('confirmClicks')
      expectNoCounterexample(result, 'confirm, 2 clicks per host')
      expect(unreached(result.output, 'Finisher')).to.not.include('status[p] = 3')
    })

    it('broken: a transact that appends without the seq check double-applies a proposal', async () => {
      const result = await verification('confirmNoSeq')
      expectCounterexample(result, /assertion violated \((receipts|reopens)\[p\]<=1\)/, 'NO_SEQ_CHECK')
    })

    it('broken: a window that does not re-decide before the reopen reopens a declined or superseded proposal', async () => {
      const result = await verification('confirmNoRecheck')
      expectCounterexample(result, /assertion violated\s+!\(everFinal\[p\]\)/, 'NO_RECHECK')
    })

    it('broken: a click that takes a receipt for "applied" leaves an interrupted confirm behind for ever', async () => {
      const result = await verification('confirmNeverFinishes')
      expectCounterexample(result, /assertion violated \(status\[p\]!=2\)/, 'CONFIRMED_IS_APPLIED')
    })
  })

  describe('candidate journal (models/journal.pml)', () => {
    it('five decisions, four SIGKILLs between any two appends, reconcile on resume: no counterexample', async () => {
      const result = await verification('journal')
      expectNoCounterexample(result, 'journal')
    })

    it('broken: without reconcileJournal an interrupted promotion stays open (no receipt, or never rolled back)', async () => {
      const result = await verification('journalNoReconcile')
      expectCounterexample(result, /assertion violated\s+!\(\(\(\(stage\[j\]==1\)/, 'NO_RECONCILE')
    })

    it('broken: a planPromotion without the legality check promotes an illegal candidate', async () => {
      const result = await verification('journalNoLegality')
      expectCounterexample(result, /assertion violated legal\[digest\[j\]\]/, 'NO_LEGALITY')
    })
  })
})
