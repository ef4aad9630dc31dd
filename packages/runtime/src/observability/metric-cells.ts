/** The hot-path metric cells live in @platform/resilience (shared with the database package); the runtime's modules import them from here. */
export { cellsOf, histogramCellsOf, type MetricCells, type MetricCell, type HistogramCell, type HistogramCells } from "@platform/resilience";
