import type { Session } from '@taskward/host'
import type { ProgressSignal, RecordEnvelope, Task, TaskwardError, TransitionKind } from '@taskward/protocol'

/*
 * What other plugins hand the supervisor (gates, guards, progress sources, subcommands) and what it
 * hands them (transitions, transactions): the shapes of its extension points, see docs/supervisor.md.
 */

/** Asked before a completion review is requested and again before a completion `pass` is applied. */
export type CompletionGate = (session: Session, task: Task) => Promise<TaskwardError | undefined>

/**
 * Asked before `/task resume` resumes a paused task (see `registerResumeGuard`): a refusal leaves the
 * task paused and is the command's answer (a budget that is still used up, say).
 */
export type ResumeGuard = (session: Session, task: Task) => Promise<TaskwardError | undefined> | TaskwardError | undefined

/** Measures objective progress of a task (see `registerProgressSignal`); undefined when it cannot. */
export type ProgressSource = (session: Session, task: Task) => Promise<ProgressSignal | undefined>

/** An extra `/task <name> …` subcommand another plugin adds (recovery's `/task checks`). */
export type TaskSubcommand = (invocation: { session: Session, args: string }) => Promise<unknown> | unknown

/** One committed change of a task: the snapshot before (absent for a new task), the one after, and its kind. */
export interface TaskTransition {
  kind: TransitionKind
  previous?: Task
  next: Task
  session: Session
  /** The seq of the state record that committed `next`. */
  seq: number
}

/** What a `transact` callback decides: the records to append, and what the call resolves with. */
export interface Transaction<T> {
  records: RecordEnvelope[]
  result: T
}
