/**
 * The client tools the reference CLI runs on this machine, inside its workspace folder:
 * `read_file` and `list_dir` (tagged read-only), `write_file` (tagged edit; reports its change
 * as a unified diff with hashes, the `file_changes` of its result) and, with `--commands`,
 * `run_command` (tagged execute).
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { FileChange } from '../../durable-objects/agent-run/file-changes.ts'
import { unifiedDiff } from './unified-diff.ts'

export interface ToolResultBody {
  call_id: string
  output: string | unknown[] | Record<string, unknown>
  is_error: boolean
  file_changes?: FileChange[]
}

export interface WorkspaceTool {
  name: string
  description: string
  input_schema: Record<string, unknown>
  tags: string[]
  run(args: Record<string, unknown>, workspace: string): Promise<Omit<ToolResultBody, 'call_id'>>
}

const MAX_OUTPUT = 100_000

function sha256(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`
}

/** Resolves `relative` inside `root`; refuses paths that leave it. */
export function insideWorkspace(root: string, relative: unknown): string {
  if (typeof relative !== 'string' || relative.trim() === '')
    throw new Error('path must be a non-empty string')
  const resolved = path.resolve(root, relative)
  const rel = path.relative(root, resolved)
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${relative} is outside the workspace`)
  return resolved
}

export const READ_FILE: WorkspaceTool = {
  name: 'read_file',
  description: 'Reads a text file of the workspace. Paths are relative to the workspace root.',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string', description: 'File path relative to the workspace root' } },
    required: ['path'],
    additionalProperties: false,
  },
  tags: ['read-only'],
  async run(args, workspace) {
    const text = await readFile(insideWorkspace(workspace, args.path), 'utf8')
    return {
      output: text.length > MAX_OUTPUT ? `${text.slice(0, MAX_OUTPUT)}\n… (cut)` : text,
      is_error: false,
    }
  },
}

export const LIST_DIR: WorkspaceTool = {
  name: 'list_dir',
  description: 'Lists a folder of the workspace (names, with a trailing / for folders).',
  input_schema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'Folder relative to the workspace root ("." for the root)' },
    },
    required: ['path'],
    additionalProperties: false,
  },
  tags: ['read-only'],
  async run(args, workspace) {
    const dir = insideWorkspace(workspace, args.path === '.' ? '.' : args.path)
    const entries = await readdir(dir, { withFileTypes: true })
    return {
      output: entries
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
        .sort()
        .join('\n'),
      is_error: false,
    }
  },
}

export const WRITE_FILE: WorkspaceTool = {
  name: 'write_file',
  description: 'Creates or replaces a text file of the workspace with the given content.',
  input_schema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'File path relative to the workspace root' },
      content: { type: 'string', description: 'The whole new content of the file' },
    },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  tags: ['edit'],
  async run(args, workspace) {
    const file = insideWorkspace(workspace, args.path)
    if (typeof args.content !== 'string') throw new Error('content must be a string')
    const before = existsSync(file) ? await readFile(file) : null
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(file, args.content)
    const relative = path.relative(workspace, file).split(path.sep).join('/')
    const change: FileChange = {
      path: relative,
      op: before === null ? 'create' : 'modify',
      diff: unifiedDiff(before?.toString('utf8') ?? null, args.content, relative),
      base_hash: before === null ? null : sha256(before),
      new_hash: sha256(args.content),
    }
    return {
      output: `${before === null ? 'created' : 'wrote'} ${relative} (${Buffer.byteLength(args.content)} bytes)`,
      is_error: false,
      file_changes: [change],
    }
  },
}

export const RUN_COMMAND: WorkspaceTool = {
  name: 'run_command',
  description: 'Runs a shell command in the workspace root and returns its exit code and output.',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string', description: 'The shell command line' } },
    required: ['command'],
    additionalProperties: false,
  },
  tags: ['execute'],
  run(args, workspace) {
    return new Promise((resolve) => {
      execFile(
        process.env.SHELL ?? '/bin/sh',
        ['-c', String(args.command)],
        { cwd: workspace, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error && typeof error.code === 'number' ? error.code : error ? 1 : 0
          resolve({
            output: { exit_code: code, stdout: stdout.slice(-MAX_OUTPUT), stderr: stderr.slice(-MAX_OUTPUT) },
            is_error: code !== 0,
          })
        },
      )
    })
  },
}

export const DEFAULT_TOOLS: readonly WorkspaceTool[] = [READ_FILE, LIST_DIR, WRITE_FILE]
