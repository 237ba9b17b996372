/**
 * Plugins by short name: `'supervisor'` is `@taskward/plugin-supervisor` with its own defaults. The
 * packages are imported when a test boots with them, so the testkit needs none of them installed
 * unless a test names it.
 */
export const SHORT_NAMES = {
  admission: { package: '@taskward/plugin-admission', service: 'admission' },
  console: { package: '@taskward/plugin-console', service: undefined },
  recovery: { package: '@taskward/plugin-recovery', service: 'recovery' },
  repair: { package: '@taskward/plugin-repair', service: 'repair' },
  supervisor: { package: '@taskward/plugin-supervisor', service: 'supervisor' },
  workspace: { package: '@taskward/plugin-workspace', service: 'workspace' },
} as const satisfies Record<string, { package: string, service?: string }>

export type ShortName = keyof typeof SHORT_NAMES

/** A cordis plugin: a function, a class, or an object with `apply`. */
export type PluginLike = object | ((...args: any[]) => unknown)

/**
 * One plugin to load: a short name (`'supervisor'`), a plugin, or `[nameOrPlugin, config]`.
 * Without a config the plugin gets `{}`, i.e. its own defaults.
 */
export type PluginEntry = ShortName | PluginLike | [plugin: ShortName | PluginLike, config?: any]

export interface ResolvedPlugin {
  plugin: any
  config: any
  /** The service a short-named plugin provides (waited for by `TestHost.boot`). */
  service?: string
}

/** Turn entries into plugins, importing short-named packages. An unknown short name is a clear error. */
export async function resolvePlugins(entries: readonly PluginEntry[]): Promise<ResolvedPlugin[]> {
  const resolved: ResolvedPlugin[] = []
  for (const entry of entries) {
    const [target, config] = Array.isArray(entry) ? entry : [entry, undefined]
    if (typeof target !== 'string') {
      resolved.push({ plugin: target, config: config ?? {} })
      continue
    }
    const known = (SHORT_NAMES as Record<string, { package: string, service?: string }>)[target]
    if (!known) {
      throw new Error(`TestHost: no plugin is called "${target}". Short names: ${Object.keys(SHORT_NAMES).join(', ')}; `
        + 'pass any other plugin as the plugin itself or as [plugin, config].')
    }
    const specifier: string = known.package
    const module = await import(specifier)
    resolved.push({ plugin: module.default ?? module, config: config ?? {}, service: known.service })
  }
  return resolved
}
