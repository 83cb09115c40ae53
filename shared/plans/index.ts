/** Plans, entitlements and upgrade decisions: see docs/plans.md. */
export {
  type AllowanceState,
  chatRequestFeatures,
  checkChatEntitlements,
  checkContextLimit,
  checkDocumentAllowance,
  checkDomainAccess,
  checkFeatureAccess,
  checkModelAccess,
  checkModelAllowance,
  checkTokenAllowance,
  rateLimitedDecision,
} from './entitlements'
export {
  cheapestUpgrade,
  getPlan,
  PLAN_CATALOG,
  type Plan,
  type PlanCatalog,
  type PlanDomain,
  type PlanFeature,
  type PlanId,
  parsePlanCatalog,
} from './plan-catalog'
export {
  ActionRequiredBodySchema,
  actionRequiredError,
  buildUpgradeDecision,
  UPGRADE_REASON_STATUS,
  UPGRADE_REASONS,
  UPGRADE_SCHEMA_VERSION,
  type UpgradeDecision,
  UpgradeDecisionSchema,
  type UpgradeReason,
  upgradeHeaders,
  upgradeMessage,
} from './upgrade-decision'
