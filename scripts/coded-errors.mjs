// Preloaded (`--import`) into `npm start`'s host worker only — scripts/start.mjs hands it to the cordis CLI,
// which passes unknown options to the worker's execArgv, so the commands the host runs (validation checks)
// never load it. Before any plugin loads, it asks for TaskwardErrors whose `stack` is their one line
// `CODE: message` (CODED_STACKS in packages/protocol/src/errors.ts): a refused start is logged as its code
// and what to do, without frames; any other error keeps its stack.
globalThis[Symbol.for('taskward.coded-stacks')] = true
