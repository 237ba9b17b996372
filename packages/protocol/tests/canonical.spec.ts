import { expect } from 'chai'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { canonicalTask } from '../src/task'
import { canonicalReviewJob } from '../src/task/review-job'
import { canonicalConfirm, canonicalDecline, canonicalProposal } from '../src/repair/records'
import { canonicalInputs } from './fixtures/canonical-inputs'

/*
 * The canonical forms are derived from the record schemas. Their JSON must stay byte-identical to what
 * earlier code wrote (records already in logs, `isDeepStrictEqual` checks against recomputed states), so
 * the outputs over the fixture inputs are pinned in a golden file. `TASKWARD_UPDATE_GOLDEN=1` rewrites it.
 */
const GOLDEN = fileURLToPath(new URL('./fixtures/canonical-golden.json', import.meta.url))

function outputs() {
  const inputs = canonicalInputs()
  return {
    tasks: inputs.tasks.map((t) => JSON.stringify(canonicalTask(t))),
    proposals: inputs.proposals.map((p) => JSON.stringify(canonicalProposal(p))),
    confirms: inputs.confirms.map((c) => JSON.stringify(canonicalConfirm(c))),
    declines: inputs.declines.map((d) => JSON.stringify(canonicalDecline(d))),
    jobs: inputs.jobs.map((j) => JSON.stringify(canonicalReviewJob(j))),
  }
}

describe('canonical forms', () => {
  it('are byte-identical to the pinned outputs over the fixtures', () => {
    const actual = outputs()
    if (process.env.TASKWARD_UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, JSON.stringify(actual, null, 1) + '\n')
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8'))
    expect(actual.tasks.length).to.be.greaterThan(40)
    for (const key of Object.keys(golden) as (keyof typeof actual)[]) {
      expect(actual[key].length, key).to.equal(golden[key].length)
      actual[key].forEach((json, i) => expect(json, `${key}[${i}]`).to.equal(golden[key][i]))
    }
  })

  it('drop unknown keys and undefined optionals at every level, and share nothing with the input', () => {
    const inputs = canonicalInputs()
    const half = inputs.tasks.length / 2
    inputs.tasks.slice(0, half).forEach((task, i) => {
      const decorated = canonicalTask(inputs.tasks[half + i])
      expect(decorated).to.deep.equal(canonicalTask(task))
      expect(JSON.stringify(decorated)).to.not.match(/junk|undefinedField|smuggled/)
    })
    const task = inputs.tasks.find((t) => t.repairHistory && t.plan)!
    const copy = canonicalTask(task)
    expect(copy.plan).to.not.equal(task.plan)
    expect(copy.plan!.nodes[0]).to.not.equal(task.plan!.nodes[0])
    expect(copy.nodeRuns).to.not.equal(task.nodeRuns)
    expect(copy.repairHistory![0].previousRuns).to.not.equal(task.repairHistory![0].previousRuns)
  })
})
