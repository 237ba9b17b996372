import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

export interface Config {
  /** Queue controller follow-up turns to the main agent while work remains. */
  automaticContinuation: boolean
  /** Main-agent turns without a stage report after which a progress review runs. */
  progressReviewAfterTurns: number
  /** Follow-up turns the controller may queue per /task approve, /task resume or continueTask. */
  maxContinuations: number
  /** Model route of reviewer sessions. */
  reviewerModel: string
  /** Model route of main sessions started without one. */
  defaultModel: string
  /** Milliseconds a review may take in all (repair turn included) before it fails with REVIEW_FAULT. */
  reviewDeadlineMs: number
  /** Identical calls with identical results in a row after which another is answered TOOL_REPEATED (0: off). */
  repeatedCallLimit: number
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('supervisor', Schema.object({
  automaticContinuation: Schema.boolean().default(true)
    .description('Queue controller follow-up turns to the main agent while work remains.'),
  progressReviewAfterTurns: Schema.natural().min(1).default(3)
    .description('Main-agent turns without a stage report after which a progress review runs.'),
  maxContinuations: Schema.natural().min(1).default(50)
    .description('Follow-up turns the controller may queue per /task approve or /task resume.'),
  reviewerModel: Schema.string().min(1).default('scripted')
    .description('Model route that drives reviewer sessions.'),
  defaultModel: Schema.string().min(1).default('scripted')
    .description('Model route of main sessions started without naming one (startSession, the console).'),
  reviewDeadlineMs: Schema.natural().min(1).default(600000)
    .description('Milliseconds a review may take in all (its repair turn included); past it the reviewer is stopped and the review fails with REVIEW_FAULT (the task pauses).'),
  repeatedCallLimit: Schema.natural().default(3)
    .description('The same tool with identical arguments and an identical result this many times in a row in one session: the next identical call is answered TOOL_REPEATED, and one more ends the turn and pauses the task (loop). 0 turns it off.'),
})) as Schema<Partial<Config>, Config>
