import { defineErrorCode } from '@taskward/protocol'

/** Completion refused: the task has no audit note yet (`/task audit note <text>` adds one). */
export const NOTE_MISSING = defineErrorCode('audit.note_missing', 409)

/** `/task audit <something it does not know>`. */
export const USAGE = defineErrorCode('audit.usage', 400)
