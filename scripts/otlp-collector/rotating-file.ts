/**
 * An append-only JSON-lines file with a size bound, rotated like logrotate: when the next line
 * would take `<name>.jsonl` past `maxBytes`, it becomes `<name>.1.jsonl`, the older ones move up
 * one (`.1` → `.2` …) and the oldest beyond `keep` is deleted. So one signal never holds more than
 * (keep + 1) × maxBytes on disk, plus one line when a single line is larger than maxBytes (a file
 * always takes at least one whole line; a line is never split).
 *
 * Lines are appended synchronously, each with one write: in order, whole, and on disk before the
 * collector answers, so an export acknowledged is an export kept.
 */
import { appendFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'

export interface RotatingFileOptions {
  maxBytes: number
  /** Rotated files kept besides the current one. */
  keep: number
}

export class RotatingJsonLines {
  private readonly dir: string
  private readonly name: string
  private readonly options: RotatingFileOptions
  private size: number

  constructor(dir: string, name: string, options: RotatingFileOptions) {
    this.dir = dir
    this.name = name
    this.options = options
    mkdirSync(dir, { recursive: true })
    this.size = existsSync(this.fileAt(0)) ? statSync(this.fileAt(0)).size : 0
  }

  /** `<name>.jsonl` (index 0) or the rotated `<name>.<index>.jsonl`. */
  fileAt(index: number): string {
    return path.join(this.dir, index === 0 ? `${this.name}.jsonl` : `${this.name}.${index}.jsonl`)
  }

  get current(): string {
    return this.fileAt(0)
  }

  append(line: string): void {
    const bytes = Buffer.from(`${line}\n`, 'utf8')
    if (this.size > 0 && this.size + bytes.length > this.options.maxBytes) this.rotate()
    appendFileSync(this.current, bytes)
    this.size += bytes.length
  }

  private rotate(): void {
    rmSync(this.fileAt(this.options.keep), { force: true })
    for (let i = this.options.keep - 1; i >= 0; i--) {
      if (existsSync(this.fileAt(i))) renameSync(this.fileAt(i), this.fileAt(i + 1))
    }
    if (this.options.keep === 0) rmSync(this.current, { force: true })
    this.size = 0
  }
}
