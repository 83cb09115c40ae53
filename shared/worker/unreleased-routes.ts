/**
 * Routes of a family whose feature is not part of this release answer 501 with a clear message,
 * after the gateway has already applied routing, authentication, tenancy and 404/405. Each family
 * replaces these as its feature lands.
 */
import type { OpenAPIHono } from '@hono/zod-openapi'
import { AppError } from '../http/errors'
import { type Family, ROUTES } from '../routing/route-table'
import type { FamilyEnv } from './family-app'

export function answerUnreleasedRoutes<B extends object>(
  app: OpenAPIHono<FamilyEnv<B>>,
  family: Family,
  except: readonly string[] = [],
): void {
  for (const route of ROUTES) {
    if (route.family !== family || except.includes(`${route.method} ${route.path}`)) continue
    app.on(route.method, route.path, () => {
      throw new AppError(
        501,
        'feature_unavailable',
        `${route.method} ${route.path} is not available in this release of the ${family} service.`,
      )
    })
  }
}
