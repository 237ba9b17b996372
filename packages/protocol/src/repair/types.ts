/*
 * Repair after completion: a proposal names a defect of a complete task, its root nodes and the
 * impact; only the user's confirmation click (a `confirm` receipt) reopens the task. Records are
 * immutable; a proposal's status is derived by the projection from the records that follow it.
 */
import type { DependencyCounts } from '../workspace/stamp'

export const REPAIR_SOURCES = ['main-agent', 'consultation', 'user'] as const
/** Who proposed: the main agent's tool, the consultation session's tool, or the user in the console. */
export type RepairSource = typeof REPAIR_SOURCES[number]

export const PROPOSAL_STATUSES = ['pending', 'confirmed', 'applied', 'declined', 'superseded'] as const
/**
 * Derived, never stored: `pending` (awaiting the user), `confirmed` (receipt written, reopen not yet
 * recorded — needs another click after an interruption), `applied` (the reopened state was accepted),
 * `declined`, `superseded` (a newer proposal replaced it).
 */
export type ProposalStatus = typeof PROPOSAL_STATUSES[number]

/** The workspace identity stamp taken when the proposal was made (see plugins/workspace). */
export interface WorkspaceArtifact {
  workspaceKey: string
  /** sha256 hex */
  digest: string
  files: number
  bytes: number
  /** Links recorded; absent on proposals from before links were. */
  links?: number
  /** The part in dependency directories; absent on proposals from before they were set apart. */
  dependencies?: DependencyCounts
}

/** Payload of a `proposal` record. */
export interface RepairProposal {
  id: string
  taskId: string
  /** The complete task's revision the proposal is bound to. */
  taskRevision: number
  /** Absent on proposals from before sources were recorded; shown as "source not recorded". */
  source?: RepairSource
  proposerSessionId?: string
  /** 1..120 characters, trimmed. */
  title: string
  /** 1..10000 characters. */
  reason: string
  /** Nodes with the defect (≥ 1, unique). */
  rootNodeIds: string[]
  /** Roots and their descendants in plan order, each once. */
  affectedNodeIds: string[]
  /** Main-session evidence events (unique, ascending). */
  evidenceSeqs: number[]
  artifact: WorkspaceArtifact
  proposedAt: number
  /** The seq of the event that carries this proposal record. */
  proposedSeq: number
}

export const WEB_CONFIRMATION = 'web-confirmation'

/** Payload of a `confirm` record: the receipt of the user's click. */
export interface RepairConfirm {
  proposalId: string
  taskId: string
  taskRevision: number
  source: typeof WEB_CONFIRMATION
  confirmedAt: number
}

/** Payload of a `decline` record. */
export interface RepairDecline {
  proposalId: string
  taskId: string
  taskRevision: number
  source: typeof WEB_CONFIRMATION
  declinedAt: number
}

/** A confirmation receipt together with the seq of its event (what `reopenTask` needs). */
export interface ConfirmationReceipt extends RepairConfirm {
  seq: number
}

/** A decline with the seq of its event. */
export interface DeclineReceipt extends RepairDecline {
  seq: number
}

/** A proposal as the projection knows it: the durable record plus its derived status. */
export interface TrackedProposal {
  proposal: RepairProposal
  status: ProposalStatus
  /** The latest confirmation receipt (a re-click after an interrupted reopen replaces it). */
  confirmation?: ConfirmationReceipt
  decline?: DeclineReceipt
  /** Seq of the accepted reopened state record (status `applied`). */
  appliedSeq?: number
  /** Seq of the proposal that superseded this one. */
  supersededBySeq?: number
}
