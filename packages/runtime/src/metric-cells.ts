/** The hot-path metric cells live in @platform/resilience (shared with the database package); the runtime's modules import them from here. */
export { MetricCells, cellsOf, HistogramCell, HistogramCells, histogramCellsOf, type MetricCell } from "@platform/resilience";
