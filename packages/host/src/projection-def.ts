import { TaskwardError, type SessionEvent } from '@taskward/protocol'

/**
 * A projection folds a session's log into state. `apply` must be pure and must not mutate its input
 * state: the cached state is shared. `version` names the fold's shape; a cached state of another
 * version is discarded and rebuilt from seq 0.
 */
export interface ProjectionDef<S = any> {
  key: string
  version: number
  /**
   * The event types this fold reads; only those are read from the log (through the type index).
   * Absent: every event. Events handed to `apply` are not frozen: the fold owns them.
   */
  types?: readonly string[]
  /**
   * With `types`: the log moved on to `seq` through events this fold does not read. Return the state
   * as folded through `seq` (a state that records its own position moves it here). Absent: the state
   * is kept as it is.
   */
  skipTo?(state: S, seq: number): S
  init(): S
  apply(state: S, event: SessionEvent): S
}

/**
 * What `register` takes: a `ProjectionDef`, or the same with DSH's name `stateVersion` instead of
 * `version` (a documented alias; giving both with different values is refused).
 */
export type ProjectionRegistration<S = any> =
  | ProjectionDef<S>
  | (Omit<ProjectionDef<S>, 'version'> & { stateVersion: number, version?: number })

/** Normalize DSH's `stateVersion` to `version`. */
export function projectionDef<S>(registration: ProjectionRegistration<S>): ProjectionDef<S> {
  const { stateVersion } = registration as { stateVersion?: number }
  const version = registration.version ?? stateVersion
  if (!Number.isSafeInteger(version) || (stateVersion !== undefined && registration.version !== undefined && stateVersion !== registration.version)) {
    throw new TaskwardError('CONFIG_INVALID',
      `Projection "${registration.key}" needs one integer version: give \`version\` (or DSH's alias \`stateVersion\`), not two different ones.`)
  }
  if (registration.version === version) return registration as ProjectionDef<S>
  return { ...registration, version: version! } as ProjectionDef<S>
}
