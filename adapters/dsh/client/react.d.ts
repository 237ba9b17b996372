// The few parts of React the panel uses. The bundle never carries React: DSH's page shares its own
// through the module table (`require('react')`), so these are types only (no @types/react dependency).
declare module 'react' {
  export type ReactNode = unknown
  export function createElement(type: unknown, props?: Record<string, unknown> | null, ...children: unknown[]): ReactNode
  export function useState<T>(initial: T | (() => T)): [T, (next: T | ((previous: T) => T)) => void]
  export function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void
  export function useRef<T>(initial: T): { current: T }
  export function useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, snapshot: () => T): T
  export const Fragment: unknown
}
