/**
 * Objective progress, as another plugin (the recovery controller) measures it: the supervisor's
 * continuation asks for it before it spends a progress review, so that turns without a stage report
 * that still change what the checks say are not mistaken for a loop — and turns that change nothing
 * objective are, whatever their text says.
 */
export interface ProgressSignal {
  /** True when the evidence shows progress (a new passing check, a changed failure on a changed candidate). */
  progress: boolean
  /** What was measured, for the log and the follow-up message. */
  evidence: string
}

/** The first signal that shows progress wins; otherwise the first that measured anything. */
export function combineProgressSignals(signals: readonly (ProgressSignal | undefined)[]): ProgressSignal | undefined {
  return signals.find((signal) => signal?.progress) ?? signals.find((signal) => signal !== undefined)
}
