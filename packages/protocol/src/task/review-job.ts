import Schema from 'schemastery'
import type { RecordEnvelope } from '../envelope'
import { defineReader, optional } from '../records/reader'
import { absentOr, isArrayOf, isNatural, isNonEmpty, isObject, isPositive, isString, oneOf } from '../records/shape'
import { canonicalizer } from './canonical'
import { REVIEW_KINDS, REVIEW_VERDICTS, type ReviewKind, type ReviewVerdict } from './types'

/*
 * `dsh-task-supervisor-review` `job` records: one per state change of a reviewer job (requested, then
 * finished or failed). The reviewer runs in its own session and reads the main log up to `cutoffSeq`.
 */

export const REVIEW_NAMESPACE = 'dsh-task-supervisor-review'
export const REVIEW_JOB_KIND = 'job'
export const REVIEW_SCHEMA_VERSION = 1

export const REVIEW_JOB_STATUSES = ['requested', 'finished', 'failed'] as const
export type ReviewJobStatus = typeof REVIEW_JOB_STATUSES[number]

export interface ReviewJob {
  jobId: string
  taskId: string
  /** The task revision the review evaluates; a result for another revision is stale. */
  taskRevision: number
  kind: ReviewKind
  nodeId?: string
  model: string
  reviewerSessionId: string
  /** Main-session seqs the reviewer was pointed at. */
  evidenceSeqs: number[]
  /** The reviewer reads the main log up to and including this seq. */
  cutoffSeq: number
  status: ReviewJobStatus
  /** Present when finished. */
  verdict?: ReviewVerdict
  findings?: string[]
}

const reviewJobSchema = Schema.object({
  jobId: Schema.string().min(1).required(),
  taskId: Schema.string().min(1).required(),
  taskRevision: Schema.natural().min(1).required(),
  kind: Schema.union([...REVIEW_KINDS]).required(),
  nodeId: Schema.string().min(1),
  model: Schema.string().min(1).required(),
  reviewerSessionId: Schema.string().min(1).required(),
  evidenceSeqs: Schema.array(Schema.natural()).required(),
  cutoffSeq: Schema.natural().required(),
  status: Schema.union([...REVIEW_JOB_STATUSES]).required(),
  verdict: Schema.union([...REVIEW_VERDICTS]),
  findings: optional(Schema.array(Schema.string())),
})

const isReviewKind = oneOf(REVIEW_KINDS)
const isJobStatus = oneOf(REVIEW_JOB_STATUSES)
const isVerdict = oneOf(REVIEW_VERDICTS)

/** `reviewJobSchema`, checked without throwing (the reader's fast path; accepts only what it accepts). */
export function isReviewJobV1(value: unknown): value is ReviewJob {
  return isObject(value) && isNonEmpty(value.jobId) && isNonEmpty(value.taskId) && isPositive(value.taskRevision)
    && isReviewKind(value.kind) && absentOr(value.nodeId, isNonEmpty) && isNonEmpty(value.model)
    && isNonEmpty(value.reviewerSessionId) && isArrayOf(value.evidenceSeqs, isNatural) && isNatural(value.cutoffSeq)
    && isJobStatus(value.status) && absentOr(value.verdict, isVerdict)
    && absentOr(value.findings, (findings) => isArrayOf(findings, isString))
}

const copyReviewJob = canonicalizer(reviewJobSchema)

/** A fresh copy with known fields only (optional ones only when defined), derived from the schema. */
export const canonicalReviewJob = (job: ReviewJob): ReviewJob => copyReviewJob(job)

/** Reads review jobs into their canonical form (a fresh copy, known fields only). */
export const reviewJobReader = defineReader({
  namespace: REVIEW_NAMESPACE,
  writes: REVIEW_SCHEMA_VERSION,
  minVersion: REVIEW_SCHEMA_VERSION,
  kinds: { [REVIEW_JOB_KIND]: { schemas: { 1: reviewJobSchema }, today: isReviewJobV1, canonical: canonicalReviewJob } },
})

export function reviewJobEnvelope(job: ReviewJob, recordId: string): RecordEnvelope<ReviewJob> {
  return {
    namespace: REVIEW_NAMESPACE,
    schemaVersion: REVIEW_SCHEMA_VERSION,
    kind: REVIEW_JOB_KIND,
    recordId,
    payload: canonicalReviewJob(job),
  }
}
