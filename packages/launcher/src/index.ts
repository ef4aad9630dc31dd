export { startPlatform, serviceEntry, launcherForm, serviceNames, defaultPorts, type ExtraService, type Platform, type PlatformOptions, type RunningService, type ServiceName } from "./start-platform.js";
export { ServiceProcess } from "./service-process.js";
export { ensureServiceRoles } from "./service-roles.js";
export { discoverServices } from "./discover-services.js";
