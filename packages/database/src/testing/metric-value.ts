import { register } from "prom-client";

/** Current value of one labelled series on the default registry (0 when absent). */
export async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = register.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return match?.value ?? 0;
}
