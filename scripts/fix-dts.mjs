#!/usr/bin/env node
// After `yakumo build`: make the emitted declarations resolvable under `moduleResolution: node16/nodenext`.
// tsc copies relative specifiers as written in the sources (`./service`), which nodenext refuses in an ESM
// package; this rewrites each to the file it means (`./service.js` or `./service/index.js`).
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// `from './x'`, `import('./x')`, `import('..')`: relative specifiers, with or without a path after the dots.
const SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}(?:\/[^'"]*)?)\2/g

function* declarations(dir) {
  if (!existsSync(dir)) return
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) yield* declarations(path)
    else if (name.endsWith('.d.ts')) yield path
  }
}

export function fixSpecifier(file, specifier) {
  if (/\.(m|c)?js$/.test(specifier)) return specifier
  const base = resolve(dirname(file), specifier)
  if (existsSync(`${base}.d.ts`)) return `${specifier}.js`
  if (existsSync(join(base, 'index.d.ts'))) return `${specifier.replace(/\/$/, '')}/index.js`
  return specifier
}

let changed = 0
for (const group of ['packages', 'plugins', 'examples']) {
  if (!existsSync(join(root, group))) continue
  for (const name of readdirSync(join(root, group))) {
    for (const file of declarations(join(root, group, name, 'lib'))) {
      const text = readFileSync(file, 'utf8')
      const fixed = text.replace(SPECIFIER, (_, head, quote, specifier) => `${head}${quote}${fixSpecifier(file, specifier)}${quote}`)
      if (fixed !== text) {
        writeFileSync(file, fixed)
        changed++
      }
    }
  }
}
console.log(`fix-dts: rewrote relative specifiers in ${changed} declaration files`)
