/**
 * The order in which vitest starts test files. Its own order takes the projects of a group one
 * after another (by name) and then each project's files, longest first; in a group of several
 * projects that leaves the longest files of the last project (the PostgreSQL ones) to start last,
 * and the group waits on them alone. This order keeps the groups (`sequence.groupOrder`) and starts
 * the longest files of the whole group first: the files named in `longFirst`, in that order (a
 * clean clone has no timings), then the others by their duration in the last run vitest's cache
 * recorded, then by size.
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import { BaseSequencer, type TestSpecification, type Vitest } from 'vitest/node'

export function longestFirstSequencer(longFirst: readonly string[]) {
  return class LongestFirstSequencer extends BaseSequencer {
    constructor(ctx: Vitest) {
      super(ctx)
    }

    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const root = this.ctx.config.root
      const key = (spec: TestSpecification) => {
        const file = path.relative(root, spec.moduleId)
        const rank = longFirst.indexOf(file)
        return {
          group: spec.project.config.sequence.groupOrder,
          rank: rank === -1 ? longFirst.length : rank,
          duration: this.ctx.cache.getTestSpecificationResult(spec)?.duration ?? 0,
          size: statSync(spec.moduleId, { throwIfNoEntry: false })?.size ?? 0,
        }
      }
      const keys = new Map(files.map((spec) => [spec, key(spec)]))
      return [...files].sort((a, b) => {
        const x = keys.get(a)!
        const y = keys.get(b)!
        return x.group - y.group || x.rank - y.rank || y.duration - x.duration || y.size - x.size
      })
    }
  }
}
