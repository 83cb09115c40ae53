/** SIGKILL of `npm start -- --runtime=workerd` (plain workerd): test/e2e/crash-scenario.ts. */
import { crashScenario } from './crash-scenario.ts'

crashScenario('workerd')
