/**
 * What the policies know about the platform besides the manifests: which
 * services exist and who calls them, which variables each service reads,
 * and the numbers the shutdown and database rules compare against. The
 * manifest test reads them from the repository (source-facts.ts); the
 * policies' own specs use a small made-up platform (testing/fixture.ts).
 */
export interface ServiceFacts {
  /** The services allowed to call this one; the gateway (public) has none. */
  callers: string[];
  /** Every variable the service reads, or its image needs: anything else set on it is a typo. */
  env: Set<string>;
  /** Whether it reads DATABASE_URL. */
  needsDatabase: boolean;
  /** DB_POOL_MAX when the manifests do not set it (the code's default). */
  dbPoolMaxDefault?: number;
}

export interface PlatformFacts {
  /** The app.kubernetes.io/part-of label of every object. */
  partOf: string;
  /** The service whose RPC port alone may be reachable from outside the cluster. */
  publicService: string;
  services: Record<string, ServiceFacts>;
  /** DRAIN_TIMEOUT_MS when the manifests do not set it. */
  defaultDrainMs: number;
  /** Seconds between the end of the drain and SIGKILL: closing pools, flushing logs. */
  shutdownSlackSeconds: number;
  /** Connections the platform may hold at its largest scale (docs/scaling.md). */
  databaseConnectionBudget: number;
  /** The Secret holding each service's DATABASE_URL under the key `<service>-url`, created out of band. */
  databaseSecret: string;
  /** The image's non-root user. */
  runAsUser: number;
}
