import type { Context, Logger } from 'cordis'
import { isActive } from '@taskward/cordis-compat'
import type { Agent, TurnSummary } from '@taskward/host'
import { TaskwardError, type Task } from '@taskward/protocol'
import type { Config } from './config'
import { nextInstruction } from './instructions'
import type { Supervisor } from './service'

/** The controller's hold on one main session, in memory only: a restart leaves every session disarmed. */
interface Drive {
  armed: boolean
  /** Follow-ups queued since the last arm. */
  continuations: number
  /** Main-agent turns of an active task since the last stage report. */
  turnsWithoutReport: number
}

export interface ControllerStatus {
  armed: boolean
  /** A live task that nothing drives: after a restart it waits for /task resume. */
  awaitingManualResume: boolean
  continuationsLeft: number
}

const DRIVEN_PHASES: readonly Task['phase'][] = ['planning', 'active', 'reviewing']

/**
 * Continuation: while armed (by /task new, approve, resume or continueTask) the controller queues a
 * follow-up turn to the main agent whenever its task has work the agent can do, and asks for a progress
 * review after `progressReviewAfterTurns` turns without a stage report. It never continues after a turn
 * without any tool call, never queues behind other queued turns and stops after `maxContinuations`.
 */
export class Controller {
  private readonly drives = new Map<string, Drive>()
  /** Taken at start: a stopping host disposes its logger service before work in flight settles. */
  private readonly logger: Logger

  constructor(private home: Context, private supervisor: Supervisor, private config: Config) {
    this.logger = home.logger('supervisor')
    home.on('agent/turn-end', (agent, summary) => {
      if (agent.session.role !== 'main') return
      this.onTurnEnd(agent, summary).catch((error) => {
        // Once the host stops (Ctrl-C), a turn-end still in flight fails on disposed services: expected.
        if (this.live) this.logger.warn(error)
      })
    })
  }

  /** False once the supervisor plugin is disposed (the host stops): nothing more may be queued. */
  private get live() {
    return isActive(this.home)
  }

  arm(sessionId: string) {
    this.drives.set(sessionId, { armed: true, continuations: 0, turnsWithoutReport: 0 })
  }

  disarm(sessionId: string) {
    const drive = this.drives.get(sessionId)
    if (drive) drive.armed = false
  }

  isArmed(sessionId: string) {
    return this.drives.get(sessionId)?.armed ?? false
  }

  /** A stage report resets the count that leads to a progress review. */
  reported(sessionId: string) {
    const drive = this.drives.get(sessionId)
    if (drive) drive.turnsWithoutReport = 0
  }

  status(sessionId: string, task: Task | undefined): ControllerStatus {
    const drive = this.drives.get(sessionId)
    const armed = drive?.armed ?? false
    return {
      armed,
      awaitingManualResume: !armed && !!task && task.enabled && DRIVEN_PHASES.includes(task.phase),
      continuationsLeft: armed ? Math.max(0, this.config.maxContinuations - drive!.continuations) : 0,
    }
  }

  /** Arm and queue `message` as a controller turn (bringing the agent back if it is not live). */
  async continueWith(sessionId: string, message: string) {
    const agent = this.supervisor.mainAgent(sessionId) ?? await this.home.agents.resume(sessionId)
    if (agent.session.role !== 'main') {
      throw new TaskwardError('BAD_REQUEST', `Session ${sessionId} is not a main session; only main agents receive task turns.`)
    }
    this.arm(sessionId)
    this.drives.get(sessionId)!.continuations++
    agent.followup(message, { origin: 'controller' })
  }

  /** After a review changed the task: wake an idle agent if there is work for it. */
  afterReview(sessionId: string, task: Task, extra?: string) {
    if (task.phase === 'paused' || task.phase === 'complete' || task.phase === 'cleared') this.disarm(sessionId)
    else this.queueNext(sessionId, task, extra)
  }

  /**
   * Queue the next instruction if armed, within budget and the agent is idle with nothing queued.
   * `force` (an explicit /task resume) follows up even when automatic continuation is off.
   */
  queueNext(sessionId: string, task: Task | undefined, extra?: string, options: { force?: boolean } = {}): boolean {
    const drive = this.drives.get(sessionId)
    if (!this.live || !drive?.armed || !(this.config.automaticContinuation || options.force)) return false
    const agent = this.supervisor.mainAgent(sessionId)
    if (!agent || agent.state !== 'idle' || agent.queued) return false
    const message = nextInstruction(task, extra)
    if (!message) return false
    if (drive.continuations >= this.config.maxContinuations) {
      drive.armed = false
      this.logger.warn('session %s: %d continuations used; waiting for /task resume', sessionId, drive.continuations)
      return false
    }
    drive.continuations++
    agent.followup(message, { origin: 'controller', taskId: task!.id, revision: task!.revision })
    return true
  }

  private async onTurnEnd(agent: Agent, summary: TurnSummary) {
    const drive = this.drives.get(agent.id)
    if (!drive?.armed) return
    if (summary.refused || summary.error || summary.cancelled) return
    const task = (await this.supervisor.state(agent.session)).current
    if (summary.toolCalls.includes('task_report_stage')) drive.turnsWithoutReport = 0
    else if (task?.phase === 'active') drive.turnsWithoutReport++
    // A turn that called no tool made no progress the controller can see: wait for the user.
    if (!summary.toolCalls.length) return
    if (task?.phase === 'active' && this.config.automaticContinuation && drive.turnsWithoutReport >= this.config.progressReviewAfterTurns) {
      drive.turnsWithoutReport = 0
      // Objective deltas (e.g. the recovery controller's checks) outrank the turn count: measured
      // progress continues the task; no measured progress is what the progress review is for.
      const signal = await this.supervisor.objectiveProgress(agent.session, task)
      // A progress check can outlive the host (Ctrl-C while it ran): then there is nobody to continue.
      if (!this.live) return
      if (signal?.progress) {
        this.queueNext(agent.id, task, `Objective progress since the last measurement: ${signal.evidence}.`)
        return
      }
      await this.supervisor.reviews.requestProgress(agent.session)
      return
    }
    this.queueNext(agent.id, task)
  }
}
