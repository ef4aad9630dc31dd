export {
  startPlatform,
  serviceEntry,
  launcherForm,
  defaultServicesForm,
  serviceNames,
  type Platform,
  type PlatformOptions,
  type RunningService,
  type ServiceName,
} from "./start-platform.js";
export { ServiceProcess } from "./service-process.js";
export { ensureServiceRoles } from "./service-roles.js";
