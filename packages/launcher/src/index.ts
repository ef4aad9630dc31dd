export {
  startPlatform,
  serviceEntry,
  launcherForm,
  serviceNames,
  type Platform,
  type PlatformOptions,
  type RunningService,
  type ServiceName,
} from "./start-platform.js";
export { ServiceProcess } from "./service-process.js";
export { ensureServiceRoles } from "./service-roles.js";
