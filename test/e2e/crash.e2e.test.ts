/** SIGKILL of `npm start` on Miniflare (the default runtime): test/e2e/crash-scenario.ts. */
import { crashScenario } from './crash-scenario.ts'

crashScenario('miniflare')
