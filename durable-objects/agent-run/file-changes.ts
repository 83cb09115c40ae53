/**
 * A file change as the protocol reports it: in `file.delta` events, and in the `file_changes` a
 * client attaches to the result of a tool that edited files (the plane never touches the caller's
 * files itself, so the client that ran the edit says what it changed).
 *
 * Rules: `diff` is a unified diff; hashes are `sha256:` + 64 lowercase hex digits of the file
 * bytes; a `create` has no base (`base_hash: null`), a `delete` no new content (`new_hash: null`),
 * every other op names both; `from_path` is present exactly for renames.
 */
import { z } from 'zod'
import type { EventDataOf } from './agent-events'

export const FILE_OPS = ['create', 'modify', 'delete', 'rename'] as const
export type FileOp = (typeof FILE_OPS)[number]

export const FileHashSchema = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, { error: 'hashes are "sha256:" + 64 lowercase hex digits' })

/** Fields of one change; `fileChangeProblems` adds the rules between them. */
export const fileChangeShape = {
  path: z.string().min(1).max(4096),
  op: z.enum(FILE_OPS),
  from_path: z.string().min(1).max(4096).optional(),
  diff: z.string(),
  base_hash: FileHashSchema.nullable(),
  new_hash: FileHashSchema.nullable(),
}

interface ChangeFields {
  op: FileOp
  from_path?: string | undefined
  base_hash: string | null
  new_hash: string | null
}

/** The cross-field rules of a file change, reported on `ctx` (used by zod `superRefine`). */
export function fileChangeProblems(data: ChangeFields, ctx: z.RefinementCtx): void {
  if (data.op === 'create' && data.base_hash !== null) {
    ctx.addIssue({
      code: 'custom',
      path: ['base_hash'],
      message: 'a created file has no base (base_hash null)',
    })
  }
  if (data.op === 'delete' && data.new_hash !== null) {
    ctx.addIssue({
      code: 'custom',
      path: ['new_hash'],
      message: 'a deleted file has no new content (new_hash null)',
    })
  }
  if (data.op !== 'create' && data.base_hash === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['base_hash'],
      message: `a ${data.op} names the content it applies to`,
    })
  }
  if (data.op !== 'delete' && data.new_hash === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['new_hash'],
      message: `a ${data.op} names the content it produces`,
    })
  }
  if ((data.op === 'rename') !== (data.from_path !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['from_path'], message: 'is present exactly for renames' })
  }
}

/** One change a client reports in `tool_results[].file_changes`. */
export const FileChangeSchema = z.object(fileChangeShape).strict().superRefine(fileChangeProblems)
export type FileChange = z.infer<typeof FileChangeSchema>

/** At most this many changes per tool result (a larger edit is summarised by the client). */
export const MAX_FILE_CHANGES = 256

/** The `turn.diff` of a turn: every change it reported, in order, as one unified diff. */
export function turnDiff(changes: readonly FileChange[]): EventDataOf<'turn.diff'> {
  return {
    diff: changes.map((c) => (c.diff === '' || c.diff.endsWith('\n') ? c.diff : `${c.diff}\n`)).join(''),
    files: changes.map((c) => ({
      path: c.path,
      op: c.op,
      ...(c.from_path ? { from_path: c.from_path } : {}),
    })),
  }
}
