import { join } from 'node:path'
import { build } from 'esbuild'

/**
 * The panel's real store code (`client/store.ts`) as a page script: an IIFE exposing it as `TW`, built
 * the way a browser gets it, for the suites that drive it in real Chromium against their own servers.
 */
export async function bundlePanelStore(): Promise<string> {
  const bundled = await build({
    entryPoints: [join(import.meta.dirname, '..', 'client', 'store.ts')],
    bundle: true, write: false, format: 'iife', globalName: 'TW', platform: 'browser', target: 'es2022', logLevel: 'warning',
  })
  return bundled.outputFiles[0]!.text
}
