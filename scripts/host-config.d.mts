// Types of scripts/host-config.mjs (and the modules it re-exports) for the tests.
export interface HostRow {
  id: string
  name: string
  config?: unknown
  disabled?: boolean
  inject?: string[] | Record<string, unknown>
  group?: boolean
}
/** One entry of a patch layer (DSH's list format). */
export interface LayerEntry {
  id?: string
  name?: string
  config?: unknown
  disabled?: boolean | null
  inject?: unknown
  group?: boolean | null
  insert?: HostRow[]
}
/** The older mapping form of a layer, still read. */
export interface LegacyOverlay {
  patch?: LayerEntry[]
  insert?: HostRow[]
}
export interface RowHistory { origin: string, patchedBy: string[] }
export type Provenance = Map<string, RowHistory>
export interface LayerOptions { baseFile?: string, patches?: string[], cwd?: string }
type Env = Record<string, string | undefined>

export const schema: unknown
export const BASE_FILE: string
export const LOCAL_FILE: string
export const PATCH_FILE: string
/** The effective config's file name for its composed text (content-addressed). */
export function effectiveFileName(text: string): string
export class HostConfigError extends Error {
  readonly code: 'CONFIG_INVALID'
  readonly details: { file?: string, id?: unknown, entry?: string }
}
export function parse(text: string, source: string): unknown
export function dump(rows: HostRow[]): string
export function checkBase(rows: unknown, source?: string): HostRow[]
export function layerEntries(layer: unknown, file: string): { entry: unknown, where: string }[]
export function applyLayer(rows: HostRow[], layer: unknown, file: string, provenance?: Provenance): HostRow[]
export function compose(base: unknown, baseFile: string, layers: { file: string, layer: unknown }[]): { rows: HostRow[], provenance: Provenance }
export function renderComposed(rows: HostRow[], provenance: Provenance, header?: string[]): string
export function layerFiles(root: string, env?: Env, patches?: string[], cwd?: string): { path: string, source: string }[]
export function resolveHostConfig(root: string, env?: Env, options?: LayerOptions): { rows: HostRow[], provenance: Provenance, sources: string[] }
export function dumpHostConfig(root: string, env?: Env, options?: LayerOptions): string
export function effectiveConfigPath(root: string, env?: Env, options?: LayerOptions): string
export function orExit<T>(fn: () => T): T
export function hostConfigFile(root: string, env?: Env, options?: LayerOptions): string
