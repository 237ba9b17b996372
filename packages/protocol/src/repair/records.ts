import { REPAIR_KINDS, REPAIR_NAMESPACE } from '../record-names'
import Schema from 'schemastery'
import { DependencyCountsSchema } from '../workspace/stamp'
import type { RecordEnvelope } from '../envelope'
import { defineReader } from '../records/reader'
import { NODE_ID_PATTERN } from '../task/schemas'
import { canonicalizer } from '../task/canonical'
import {
  REPAIR_SOURCES, WEB_CONFIRMATION, type RepairConfirm, type RepairDecline, type RepairProposal,
} from './types'

/*
 * `dsh-task-supervisor-repair` records, schema 1: `proposal`, `confirm`, `decline`. Readers return
 * canonical payloads (known fields only, optional ones only when present).
 */

export const REPAIR_SCHEMA_VERSION = 1
export { REPAIR_KINDS, REPAIR_NAMESPACE }

export const TITLE_MAX = 120
export const REASON_MAX = 10000
export const DIGEST_PATTERN = /^[a-f0-9]{64}$/

const trimmed = (max: number) => Schema.string().min(1).max(max)
  .pattern(/^\S(?:[\s\S]*\S)?$/) // no leading/trailing whitespace: titles are stored trimmed

export const artifactSchema = Schema.object({
  workspaceKey: Schema.string().min(1).required(),
  digest: Schema.string().pattern(DIGEST_PATTERN).required(),
  files: Schema.natural().required(),
  bytes: Schema.natural().required(),
  // Stamps since links and dependency directories are recorded; absent on older proposals.
  links: Schema.natural(),
  dependencies: Schema.union([DependencyCountsSchema, Schema.const(undefined)]),
})

const proposalSchema = Schema.object({
  id: Schema.string().min(1).required(),
  taskId: Schema.string().min(1).required(),
  taskRevision: Schema.natural().min(1).required(),
  source: Schema.union([...REPAIR_SOURCES]),
  proposerSessionId: Schema.string().min(1),
  title: trimmed(TITLE_MAX).required(),
  reason: Schema.string().min(1).max(REASON_MAX).required(),
  rootNodeIds: Schema.array(Schema.string().pattern(NODE_ID_PATTERN)).min(1).required(),
  affectedNodeIds: Schema.array(Schema.string().pattern(NODE_ID_PATTERN)).min(1).required(),
  evidenceSeqs: Schema.array(Schema.natural()).required(),
  artifact: artifactSchema.required(),
  proposedAt: Schema.natural().required(),
  proposedSeq: Schema.natural().required(),
})

const decisionFields = {
  proposalId: Schema.string().min(1).required(),
  taskId: Schema.string().min(1).required(),
  taskRevision: Schema.natural().min(1).required(),
  source: Schema.const(WEB_CONFIRMATION).required(),
}

const confirmSchema = Schema.object({ ...decisionFields, confirmedAt: Schema.natural().required() })
const declineSchema = Schema.object({ ...decisionFields, declinedAt: Schema.natural().required() })

export const repairReader = defineReader({
  namespace: REPAIR_NAMESPACE,
  writes: REPAIR_SCHEMA_VERSION,
  minVersion: REPAIR_SCHEMA_VERSION,
  kinds: {
    [REPAIR_KINDS.proposal]: { schemas: { 1: proposalSchema } },
    [REPAIR_KINDS.confirm]: { schemas: { 1: confirmSchema } },
    [REPAIR_KINDS.decline]: { schemas: { 1: declineSchema } },
  },
})

/** Canonical payloads, derived from the schemas (see task/canonical.ts). */
const copyProposal = canonicalizer(proposalSchema)
const copyConfirm = canonicalizer(confirmSchema)
const copyDecline = canonicalizer(declineSchema)

export const canonicalProposal = (p: RepairProposal): RepairProposal => copyProposal(p)
export const canonicalConfirm = (c: RepairConfirm): RepairConfirm => copyConfirm(c)
export const canonicalDecline = (d: RepairDecline): RepairDecline => copyDecline(d)

/** The `proposal` record (recordId = proposal id). */
export function proposalEnvelope(p: RepairProposal): RecordEnvelope<RepairProposal> {
  return { namespace: REPAIR_NAMESPACE, schemaVersion: REPAIR_SCHEMA_VERSION, kind: REPAIR_KINDS.proposal, recordId: p.id, payload: canonicalProposal(p) }
}

/** The `confirm` receipt; `recordId` is supplied by the caller. */
export function confirmEnvelope(c: RepairConfirm, recordId: string): RecordEnvelope<RepairConfirm> {
  return { namespace: REPAIR_NAMESPACE, schemaVersion: REPAIR_SCHEMA_VERSION, kind: REPAIR_KINDS.confirm, recordId, payload: canonicalConfirm(c) }
}

/** The `decline` record; `recordId` is supplied by the caller. */
export function declineEnvelope(d: RepairDecline, recordId: string): RecordEnvelope<RepairDecline> {
  return { namespace: REPAIR_NAMESPACE, schemaVersion: REPAIR_SCHEMA_VERSION, kind: REPAIR_KINDS.decline, recordId, payload: canonicalDecline(d) }
}
