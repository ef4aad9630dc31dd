export * from "./headers.js";
export { requestContext, requestContextOf, requestContextValues, type RequestContext } from "./server/request-context.js";
export { ConfigError, EnvReader, readEnv } from "./config/config.js";
export { reportUnpatched } from "./config/unpatched-dependency.js";
export {
  readServerConfig,
  databaseDeadlineOptions,
  type ServerConfig,
  type DeadlineConfig,
  type ServerDefaults,
  type AdmissionConfig,
} from "./config/server-config.js";
export { createLogger, type Logger } from "./observability/logger.js";
export { register, rpcServerMetrics, rpcClientMetrics, deadlineMetrics, serviceCounter } from "./observability/metrics.js";
export { HealthState, type OwnResources } from "./server/health.js";
export { serve, type ServeOptions, type RunningServer } from "./server/serve.js";
export { withHeartbeat } from "./server/heartbeat.js";
export { streamResumeHeader } from "./deadline/deadline-interceptor.js";
export {
  usePlugin,
  loadPlugins,
  importPlugin,
  installedPluginEffects,
  pluginSpecifiers,
  pluginsVariable,
  type PlatformPlugin,
  type PluginEffects,
  type ServerComposition,
  type ClientComposition,
} from "./config/plugin.js";
export { shareBundledModules } from "./config/bundled-modules.js";
export { serverInterceptors, serverInterceptorOrder, inOrder, type ServerInterceptors, type ServerInterceptorOptions } from "./server/server-interceptors.js";
export { runMain, exitConfigError, type ReadyMessage } from "./server/run-main.js";
export { createDependencyClient, type DependencyClientOptions } from "./client/dependency-client.js";
export { forwardService, type ForwardedCallOptions } from "./client/forward-service.js";
export { apiRoutes, generatedService, type ServiceRoute } from "./server/api-routes.js";
export { readDependencyConfig, defaultIsolation, type DependencyConfig, type IsolationDefaults, type KeepaliveConfig } from "./client/dependency-config.js";
export type { IsolationConfig, BreakerConfig } from "./client/isolation-interceptor.js";
export { mapDownstreamError, wasNeverProcessed } from "./client/downstream-error.js";
export { codeLabel } from "./observability/code-label.js";
export { registerTracerProvider } from "./observability/tracing.js";
export { sendJson, sendText, type HttpEndpoint } from "./server/http-endpoints.js";
export { readIntakeConfig, type IntakeConfig } from "./edge/intake.js";
export { readAuthConfig, type AuthConfig } from "./edge/edge-auth.js";
export { readRateLimitConfig, type RateLimitConfig } from "./edge/rate-limit.js";
export { quotaExceeded, readTenantQuotaConfig, type TenantQuotaConfig } from "./edge/tenant-quota.js";
export { readCorsConfig, type CorsConfig } from "./edge/cors.js";
export { createEdge, type EdgeOptions, type ServerEdge } from "./edge/edge.js";
export { effectiveConfig, type EffectiveConfig } from "./config/effective-config.js";
export type { WiredDependencyClient } from "./config/loaded-config.js";
export { redactConfig } from "./config/redact.js";
