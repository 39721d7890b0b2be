// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic hardware counters for `rdma statistic`: the driver's own admin
 * queue counters (device-wide) and the port's transport counters, which
 * the device keeps and returns with QUERY_PORT_STATS. The
 * port table's order is the interface's enum vrnic_port_stat, so a value's
 * index is the counter's index in the device's answer.
 */

#include <linux/dma-mapping.h>

#include "vrnic.h"

enum {
	VRNIC_STAT_CMDQ_SUBMITTED,
	VRNIC_STAT_CMDQ_COMPLETED,
	VRNIC_STAT_CMDQ_ERRORS,
	VRNIC_STAT_CMDQ_TIMEOUTS,
};

static const struct rdma_stat_desc vrnic_device_stats_descs[] = {
	[VRNIC_STAT_CMDQ_SUBMITTED].name = "cmdq_submitted",
	[VRNIC_STAT_CMDQ_COMPLETED].name = "cmdq_completed",
	[VRNIC_STAT_CMDQ_ERRORS].name = "cmdq_errors",
	[VRNIC_STAT_CMDQ_TIMEOUTS].name = "cmdq_timeouts",
};

static const struct rdma_stat_desc vrnic_port_stats_descs[] = {
	[VRNIC_PORT_STAT_TX_PKTS].name = "tx_pkts",
	[VRNIC_PORT_STAT_TX_BYTES].name = "tx_bytes",
	[VRNIC_PORT_STAT_RX_PKTS].name = "rx_pkts",
	[VRNIC_PORT_STAT_RX_BYTES].name = "rx_bytes",
	[VRNIC_PORT_STAT_LOOP_PKTS].name = "loop_pkts",
	[VRNIC_PORT_STAT_RX_MALFORMED].name = "rx_malformed",
	[VRNIC_PORT_STAT_RX_ICRC_ERR].name = "rx_icrc_err",
	[VRNIC_PORT_STAT_RX_NO_QP].name = "rx_no_qp",
	[VRNIC_PORT_STAT_RX_BAD_STATE].name = "rx_bad_state",
	[VRNIC_PORT_STAT_RX_BAD_PKEY].name = "rx_bad_pkey",
	[VRNIC_PORT_STAT_RX_BAD_OPCODE].name = "rx_bad_opcode",
	[VRNIC_PORT_STAT_RX_PSN_WINDOW].name = "rx_psn_window",
	[VRNIC_PORT_STAT_RX_OUT_OF_SEQ].name = "rx_out_of_seq",
	[VRNIC_PORT_STAT_RX_DUPLICATE].name = "rx_duplicate",
	[VRNIC_PORT_STAT_RX_QKEY_MISMATCH].name = "rx_qkey_mismatch",
	[VRNIC_PORT_STAT_RX_NO_WQE].name = "rx_no_wqe",
	[VRNIC_PORT_STAT_RX_RESP_DROP].name = "rx_resp_drop",
	[VRNIC_PORT_STAT_NAKS_SENT].name = "naks_sent",
	[VRNIC_PORT_STAT_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[VRNIC_PORT_STAT_NAKS_RCVD].name = "naks_rcvd",
	[VRNIC_PORT_STAT_RNR_NAKS_RCVD].name = "rnr_naks_rcvd",
	[VRNIC_PORT_STAT_SEQ_NAKS_RCVD].name = "seq_naks_rcvd",
	[VRNIC_PORT_STAT_RETRANSMITS].name = "retransmits",
	[VRNIC_PORT_STAT_TIMEOUTS].name = "timeouts",
	[VRNIC_PORT_STAT_IMPLIED_NAKS].name = "implied_naks",
	[VRNIC_PORT_STAT_RNR_RETRIES].name = "rnr_retries",
	[VRNIC_PORT_STAT_RETRY_EXC].name = "retry_exceeded",
	[VRNIC_PORT_STAT_RNR_RETRY_EXC].name = "rnr_retry_exceeded",
	[VRNIC_PORT_STAT_READ_REPLAYS].name = "read_replays",
	[VRNIC_PORT_STAT_ATOMIC_REPLAYS].name = "atomic_replays",
	[VRNIC_PORT_STAT_FAULT_DROPS].name = "fault_drops",
	[VRNIC_PORT_STAT_FAULT_REORDERS].name = "fault_reorders",
	[VRNIC_PORT_STAT_FAULT_DUPS].name = "fault_dups",
	[VRNIC_PORT_STAT_FAULT_CORRUPTS].name = "fault_corrupts",
	[VRNIC_PORT_STAT_FAULT_DELAYS].name = "fault_delays",
	[VRNIC_PORT_STAT_RX_OOO_HELD].name = "rx_ooo_held",
	[VRNIC_PORT_STAT_EARLY_RETRANSMITS].name = "early_retransmits",
	[VRNIC_PORT_STAT_RX_BAD_ADDR].name = "rx_bad_addr",
	[VRNIC_PORT_STAT_RX_OOO_DROPPED].name = "rx_ooo_dropped",
	[VRNIC_PORT_STAT_DMA_ERRORS].name = "dma_errors",
	[VRNIC_PORT_STAT_ETH_RX_NO_BUF].name = "eth_rx_no_buffer",
	[VRNIC_PORT_STAT_XLATE_HITS].name = "xlate_cache_hits",
	[VRNIC_PORT_STAT_XLATE_MISSES].name = "xlate_cache_misses",
	[VRNIC_PORT_STAT_CREDIT_WAITS].name = "credit_waits",
	[VRNIC_PORT_STAT_CREDIT_ACKS].name = "credit_update_acks",
	[VRNIC_PORT_STAT_PAGE_FAULTS].name = "odp_page_faults",
	[VRNIC_PORT_STAT_PAGE_FAULT_WAITS].name = "odp_page_fault_waits",
	[VRNIC_PORT_STAT_ODP_INVALIDATIONS].name = "odp_invalidations",
	[VRNIC_PORT_STAT_FLOW_RX].name = "flow_rx",
	[VRNIC_PORT_STAT_FLOW_DROPS].name = "flow_drops",
};

static_assert(ARRAY_SIZE(vrnic_port_stats_descs) == VRNIC_PORT_STAT_NUM);

struct rdma_hw_stats *vrnic_alloc_hw_device_stats(struct ib_device *ibdev)
{
	return rdma_alloc_hw_stats_struct(vrnic_device_stats_descs,
					  ARRAY_SIZE(vrnic_device_stats_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

struct rdma_hw_stats *vrnic_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port)
{
	return rdma_alloc_hw_stats_struct(vrnic_port_stats_descs,
					  ARRAY_SIZE(vrnic_port_stats_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int vrnic_get_port_stats(struct vrnic_dev *vdev,
				struct rdma_hw_stats *stats, u32 port)
{
	struct device *dma = &vdev->pdev->dev;
	struct vrnic_port_stats *buf;
	dma_addr_t buf_dma;
	int err;

	buf = dma_alloc_coherent(dma, sizeof(*buf), &buf_dma, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	err = vrnic_cmd_query_port_stats(vdev->cmdq, port, buf, buf_dma,
					 stats->value);
	/* A device that timed out may still write the buffer: leak it. */
	if (err != -ETIMEDOUT)
		dma_free_coherent(dma, sizeof(*buf), buf, buf_dma);
	return err ? err : VRNIC_PORT_STAT_NUM;
}

int vrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct vrnic_dev *vdev = to_vdev(ibdev);
	struct vrnic_cmdq_stats *cs = &vdev->cmdq->stats;

	if (port)
		return vrnic_get_port_stats(vdev, stats, port);

	stats->value[VRNIC_STAT_CMDQ_SUBMITTED] = atomic64_read(&cs->submitted);
	stats->value[VRNIC_STAT_CMDQ_COMPLETED] = atomic64_read(&cs->completed);
	stats->value[VRNIC_STAT_CMDQ_ERRORS] = atomic64_read(&cs->errors);
	stats->value[VRNIC_STAT_CMDQ_TIMEOUTS] = atomic64_read(&cs->timeouts);
	return ARRAY_SIZE(vrnic_device_stats_descs);
}
