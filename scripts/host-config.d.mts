// Types of scripts/host-config.mjs for the tests.
export interface HostRow {
  id: string
  name: string
  config?: unknown
  disabled?: boolean
}
export interface Overlay {
  patch?: { id: string, config?: unknown, disabled?: boolean }[]
  insert?: HostRow[]
}
export const schema: unknown
export const BASE_FILE: string
export const LOCAL_FILE: string
export const EFFECTIVE_FILE: string
export class HostConfigError extends Error {}
export function parse(text: string, source: string): unknown
export function checkBase(rows: unknown, source?: string): HostRow[]
export function applyOverlay(rows: HostRow[], overlay: unknown, source: string): HostRow[]
export function overlayFiles(root: string, env?: Record<string, string | undefined>): { path: string, source: string }[]
export function resolveHostConfig(root: string, env?: Record<string, string | undefined>): { rows: HostRow[], sources: string[] }
export function dump(rows: HostRow[]): string
export function effectiveConfigPath(root: string, env?: Record<string, string | undefined>): string
export function hostConfigFile(root: string, env?: Record<string, string | undefined>): string
