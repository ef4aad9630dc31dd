export * from "./headers.js";
export { requestContext, requestContextOf, requestContextValues, type RequestContext } from "./request-context.js";
export { ConfigError, EnvReader, readEnv } from "./config.js";
export { reportUnpatched } from "./unpatched-dependency.js";
export {
  readServerConfig,
  databaseDeadlineOptions,
  type ServerConfig,
  type DeadlineConfig,
  type ServerDefaults,
  type AdmissionConfig,
} from "./server-config.js";
export { createLogger, type Logger } from "./logger.js";
export { register, rpcServerMetrics, rpcClientMetrics, deadlineMetrics, serviceCounter } from "./metrics.js";
export { HealthState, type OwnResources } from "./health.js";
export { serve, type ServeOptions, type RunningServer } from "./serve.js";
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
} from "./plugin.js";
export { shareBundledModules } from "./bundled-modules.js";
export { serverInterceptors, serverInterceptorOrder, inOrder, type ServerInterceptors, type ServerInterceptorOptions } from "./server-interceptors.js";
export { scopeFor, countInboundDeadline, scopeEndedError } from "./deadline-interceptor.js";
export { runMain, exitConfigError, type ReadyMessage } from "./run-main.js";
export { createDependencyClient, type DependencyClientOptions } from "./dependency-client.js";
export { forwardService, type ForwardedCallOptions } from "./forward-service.js";
export { apiRoutes, generatedService, type ServiceRoute } from "./api-routes.js";
export { readDependencyConfig, defaultIsolation, type DependencyConfig, type IsolationDefaults, type KeepaliveConfig } from "./dependency-config.js";
export type { IsolationConfig, BreakerConfig } from "./isolation-interceptor.js";
export { mapDownstreamError, wasNeverProcessed } from "./downstream-error.js";
export { codeLabel } from "./code-label.js";
export { registerTracerProvider } from "./tracing.js";
export { sendJson, sendText, type HttpEndpoint } from "./http-endpoints.js";
export { readIntakeConfig, type IntakeConfig } from "./intake.js";
export { readAuthConfig, type AuthConfig } from "./edge-auth.js";
export { readRateLimitConfig, type RateLimitConfig } from "./rate-limit.js";
export { readCorsConfig, type CorsConfig } from "./cors.js";
export { createEdge, type EdgeOptions, type ServerEdge } from "./edge.js";
export { redactConfig, effectiveConfig, type EffectiveConfig, type WiredDependencyClient } from "./effective-config.js";
