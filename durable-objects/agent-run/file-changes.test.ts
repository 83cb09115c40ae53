import { describe, expect, it } from 'vitest'
import { turnDiff } from './file-changes'

const H = `sha256:${'b'.repeat(64)}`

describe('the diff of a turn', () => {
  it('sums a turn diff from its file changes', () => {
    expect(
      turnDiff([
        { path: 'a', op: 'create', diff: '+a', base_hash: null, new_hash: H },
        { path: 'b', from_path: 'c', op: 'rename', diff: '', base_hash: H, new_hash: H },
      ]),
    ).toEqual({
      diff: '+a\n',
      files: [
        { path: 'a', op: 'create' },
        { path: 'b', op: 'rename', from_path: 'c' },
      ],
    })
  })
})
