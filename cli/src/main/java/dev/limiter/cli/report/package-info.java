/**
 * {@code ./limiter report}: reads the cluster's recent history (every node's {@code GET /v1/history}, or
 * Prometheus' {@code query_range}) and the nodes' snapshots (hot keys, shadow comparison, appeals,
 * sampled rejections), merges them into one {@link dev.limiter.cli.report.ReportData} and writes one
 * self-contained HTML page ({@link dev.limiter.cli.report.HtmlReport}) whose charts are inline SVG
 * drawn by {@link dev.limiter.cli.report.SvgChart}. {@link dev.limiter.cli.report.Report} is the entry point.
 */
package dev.limiter.cli.report;
