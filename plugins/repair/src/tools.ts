import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session } from '@taskward/host'
import { TaskwardError, type RepairSource } from '@taskward/protocol'
import type { ProposeOutcome, ProposeRequest } from './propose'
import type { RepairService } from './service'

/** What the agent tools take: a proposal request whose source and proposer the tool fills in. */
type ProposeArgs = Omit<ProposeRequest, 'source' | 'proposerSessionId'>

const parameters = Schema.object({
  taskId: Schema.string().description('The complete task to repair; the current task when omitted.'),
  revision: Schema.natural().min(1).description('The task revision the defect was seen in; the current one when omitted.'),
  title: Schema.string().required().description('A short title (up to 120 characters).'),
  reason: Schema.string().required().description('The defect: what is wrong and why it is within the original objective.'),
  rootNodeIds: Schema.array(Schema.string()).required().description('Plan nodes that hold the defect; their descendants are affected too.'),
  evidenceSeqs: Schema.array(Schema.natural()).required()
    .description('Seqs of main-session events that show the defect (tool results or messages), at least one; '
      + 'task_status lists the newest citable ones under `evidence`.'),
})

function answer({ outcome, proposal }: ProposeOutcome) {
  return {
    outcome,
    proposalId: proposal.id,
    taskId: proposal.taskId,
    revision: proposal.taskRevision,
    affectedNodeIds: proposal.affectedNodeIds,
    message: 'The repair is proposed and changes nothing yet: the user must confirm it in the console\'s impact panel. '
      + 'Until then only task_status, task_propose_repair and read-only tools run.',
  }
}

function requireEvidence(args: ProposeArgs) {
  if (!args.evidenceSeqs.length) {
    throw new TaskwardError('REPAIR_EVIDENCE_INVALID',
      'A repair proposal needs evidence: cite at least one main-session tool result or message seq that shows the defect '
        + '(task_status lists the newest citable ones under `evidence`).')
  }
}

/** Who may propose with which tool, and in whose name the proposal is recorded. */
function proposer(tool: string, session: Session): { mainSessionId: string, source: RepairSource, proposerSessionId: string } {
  if (tool === 'task_propose_repair') {
    if (session.role !== 'main') {
      throw new TaskwardError('FORBIDDEN', `task_propose_repair is the main agent's tool; this is a ${session.role} session `
        + '(a consultation session proposes with supervisor_propose_repair).')
    }
    return { mainSessionId: session.id, source: 'main-agent', proposerSessionId: session.id }
  }
  if (session.role !== 'consultation' || !session.parentId) {
    throw new TaskwardError('FORBIDDEN', `supervisor_propose_repair is the consultation session's tool; this is a ${session.role} session `
      + '(the main agent proposes with task_propose_repair).')
  }
  return { mainSessionId: session.parentId, source: 'consultation', proposerSessionId: session.id }
}

/**
 * `task_propose_repair` (main agent) and `supervisor_propose_repair` (a consultation session whose
 * parent is the main session). Both only propose; no tool can confirm.
 */
export function registerRepairTools(ctx: Context, service: RepairService) {
  for (const name of ['task_propose_repair', 'supervisor_propose_repair']) {
    ctx.tools.register<ProposeArgs, ReturnType<typeof answer>>({
      name,
      recordsOnly: true,
      description: name === 'task_propose_repair'
        ? 'Propose a repair of a defect in a complete task (within its original objective). It grants nothing: the user confirms in the console.'
        : 'From a consultation: propose a repair of the main session\'s complete task; evidence seqs refer to the main session.',
      parameters,
      async execute(args, { session }) {
        const who = proposer(name, session)
        requireEvidence(args)
        const outcome = await service.propose(who.mainSessionId, {
          taskId: args.taskId,
          revision: args.revision,
          title: args.title,
          reason: args.reason,
          rootNodeIds: args.rootNodeIds,
          evidenceSeqs: args.evidenceSeqs,
          source: who.source,
          proposerSessionId: who.proposerSessionId,
        })
        return answer(outcome)
      },
    })
  }
}
