import type { TestProject } from 'vitest/node'
import { setupStack } from './stack.setup.ts'

export default (project: TestProject) => setupStack(project, 'postgres')
