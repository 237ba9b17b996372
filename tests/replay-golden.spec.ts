/*
 * Every release's golden session logs (tests/fixtures/logs/<release>/, written by real runs through
 * scripts/record-golden-logs.ts and never edited) replayed through today's projections: the supervisor
 * fold, the repair view and the recovery fold must give the recorded timeline at every seq, and every
 * recorded recovery decision must be what `decide` derives today. A divergence names the first seq.
 */
import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RECORD_EVENT_TYPE, type SessionEvent } from '@taskward/protocol'
import {
  canonicalJson, divergentDecisions, firstDivergence, parseLog, replayEvents, type TimelineStep,
} from '../scripts/replay.lib'

const LOGS = resolve(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'logs')

interface Manifest {
  release: string
  namespaces: Record<string, number>
  sessions: { name: string, describe: string, events: number, decisions: number }[]
  files: Record<string, string>
}

interface Expected {
  timeline: TimelineStep[]
  decisions: { seq: number, decisionId: string, recorded: string }[]
  final: unknown
}

const releases = readdirSync(LOGS, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()

function load(release: string, name: string) {
  const dir = join(LOGS, release)
  return {
    events: parseLog(readFileSync(join(dir, `${name}.jsonl`), 'utf8')),
    expected: JSON.parse(readFileSync(join(dir, `${name}.expected.json`), 'utf8')) as Expected,
  }
}

/** Replay `events` and fail with the first differing seq (and what differs there). */
function expectSameReplay(events: SessionEvent[], expected: Expected, label: string) {
  const replay = replayEvents(events)
  const divergence = firstDivergence(expected.timeline, replay.timeline)
  if (divergence) {
    const event = events.find((e) => e.seq === divergence.seq)
    throw new Error(`${label}: the replay diverges first at seq ${divergence.seq} (${divergence.projections.join(', ')}); `
      + `the event there: ${JSON.stringify(event)?.slice(0, 600)}`)
  }
  const decisions = divergentDecisions(replay)
  if (decisions.length) {
    throw new Error(`${label}: the recorded decision at seq ${decisions[0].seq} (${decisions[0].decisionId}) is not what decide derives today.\n`
      + `recorded: ${decisions[0].recorded}\nderived:  ${decisions[0].derived}`)
  }
  expect(replay.decisions.map(({ seq, decisionId, recorded }) => ({ seq, decisionId, recorded })), `${label}: decisions`).to.deep.equal(expected.decisions)
  expect(JSON.parse(canonicalJson(replay.final)), `${label}: final states`).to.deep.equal(expected.final)
}

describe('replay: golden session logs of every release through today\'s projections', () => {
  it('has the logs of at least one release', () => {
    expect(releases.length).to.be.greaterThan(0)
  })

  for (const release of releases) {
    describe(release, () => {
      const manifest = JSON.parse(readFileSync(join(LOGS, release, 'manifest.json'), 'utf8')) as Manifest

      it('is unedited: every file matches the sha256 its generator recorded', () => {
        const files = readdirSync(join(LOGS, release)).filter((file) => file !== 'manifest.json').sort()
        expect(files).to.deep.equal(Object.keys(manifest.files).sort())
        for (const file of files) {
          const hash = createHash('sha256').update(readFileSync(join(LOGS, release, file))).digest('hex')
          expect(hash, `${release}/${file} was edited; golden logs are never edited — record a new release instead`).to.equal(manifest.files[file])
        }
      })

      for (const session of manifest.sessions) {
        it(`${session.name}: ${session.describe}`, () => {
          const { events, expected } = load(release, session.name)
          expect(events).to.have.length(session.events)
          expect(expected.decisions).to.have.length(session.decisions)
          expectSameReplay(events, expected, `${release}/${session.name}`)
        })
      }
    })
  }

  describe('the comparison can fail (not vacuous)', () => {
    const [release] = releases
    const { events, expected } = load(release, 'repair-cycle')
    const recordSeqs = events.filter((e) => e.type === RECORD_EVENT_TYPE).map((e) => e.seq)

    it('names the first seq at which a changed record diverges', () => {
      const target = recordSeqs[Math.floor(recordSeqs.length / 2)]
      const changed = events.map((event) => event.seq !== target ? event
        : { ...event, data: { ...event.data, payload: { ...(event.data as any).payload, tampered: true, title: 'x', phase: 'cleared' } } })
      expect(() => expectSameReplay(changed, expected, 'tampered')).to.throw(new RegExp(`diverges first at seq ${target} `))
    })

    it('names the first seq at which a dropped record is missing', () => {
      const target = recordSeqs[recordSeqs.length - 3]
      const dropped = events.filter((event) => event.seq !== target)
      expect(() => expectSameReplay(dropped, expected, 'dropped')).to.throw(new RegExp(`diverges first at seq ${target} `))
    })

    it('refuses a recorded decision that decide no longer derives', () => {
      const log = load(release, 'recovery-stop')
      const decision = log.events.find((e) => (e.data as any)?.kind === 'decision')!
      const changed = log.events.map((event) => event.seq !== decision.seq ? event
        : { ...event, data: { ...event.data, payload: { ...(event.data as any).payload, action: 'RETRY', stopReason: undefined } } })
      expect(() => expectSameReplay(changed, { ...log.expected, timeline: replayEvents(changed).timeline }, 'decision'))
        .to.throw(new RegExp(`recorded decision at seq ${decision.seq}`))
    })
  })
})
