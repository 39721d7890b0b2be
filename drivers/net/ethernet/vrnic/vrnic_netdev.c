// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic Ethernet function: the net_device RoCE runs over.
 *
 * One TX and one RX ring of 16-byte descriptors in host memory, both
 * completed on MSI-X vector 1 through a single NAPI context. The device
 * raises the vector once per arm (VRNIC_REG_ETH_{TX,RX}_ARM with the first
 * index the driver has not seen done), and at once if it already completed
 * past that index, so NAPI re-arms after napi_complete_done() and no
 * completion is lost in between.
 *
 * Indices are free-running u16 counters (uapi "Rings").
 * tx.pi is written only by ndo_start_xmit (under the netdev TX lock), tx.ci
 * and everything in rx only by the NAPI poll; ndo_open/ndo_stop and
 * ndo_change_mtu touch them while NAPI is disabled and the queue stopped.
 */

#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>
#include <linux/netdevice.h>
#include <linux/unaligned.h>

#include "vrnic_core.h"

/* 256 descriptors per ring (less if the device cannot do that many) */
#define VRNIC_ETH_LOG_DEPTH	8
/* Wake a stopped TX queue once this many descriptors are free again */
#define VRNIC_ETH_TX_WAKE	16
#define VRNIC_ETH_TX_TIMEOUT	(5 * HZ)

struct vrnic_eth_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;		/* mapped length */
};

struct vrnic_eth_ring {
	struct vrnic_eth_desc *desc;
	dma_addr_t dma;
	struct vrnic_eth_buf *bufs;
	u16 depth;
	u8 log_depth;
	u16 pi;			/* free-running producer index */
	u16 ci;			/* free-running consumer index */
};

struct vrnic_eth {
	struct vrnic_core *core;
	struct net_device *netdev;
	struct device *dmadev;
	struct napi_struct napi;
	struct vrnic_eth_ring tx;
	struct vrnic_eth_ring rx;
	u32 rx_buf_len;		/* fixed while the rings are up */
	char irq_name[VRNIC_IRQ_NAME_LEN];
};

static u16 vrnic_eth_tx_free(struct vrnic_eth_ring *tx)
{
	return tx->depth - (u16)(READ_ONCE(tx->pi) - READ_ONCE(tx->ci));
}

static int vrnic_eth_ring_alloc(struct vrnic_eth *eth,
				struct vrnic_eth_ring *ring, u8 log_depth)
{
	ring->log_depth = log_depth;
	ring->depth = 1U << log_depth;
	ring->pi = 0;
	ring->ci = 0;
	ring->desc = dma_alloc_coherent(eth->dmadev,
					ring->depth * VRNIC_ETH_DESC_SIZE,
					&ring->dma, GFP_KERNEL);
	if (!ring->desc)
		return -ENOMEM;

	ring->bufs = kcalloc(ring->depth, sizeof(*ring->bufs), GFP_KERNEL);
	if (!ring->bufs) {
		dma_free_coherent(eth->dmadev,
				  ring->depth * VRNIC_ETH_DESC_SIZE,
				  ring->desc, ring->dma);
		return -ENOMEM;
	}
	return 0;
}

static void vrnic_eth_ring_free(struct vrnic_eth *eth,
				struct vrnic_eth_ring *ring)
{
	kfree(ring->bufs);
	dma_free_coherent(eth->dmadev, ring->depth * VRNIC_ETH_DESC_SIZE,
			  ring->desc, ring->dma);
}

/* Hand the buffer in rx slot idx to the device. */
static void vrnic_eth_rx_post(struct vrnic_eth_ring *rx, u16 idx)
{
	struct vrnic_eth_desc *desc = &rx->desc[idx];

	desc->addr = cpu_to_le64(rx->bufs[idx].dma);
	desc->len = cpu_to_le16(rx->bufs[idx].len);
	desc->rsvd0 = 0;
	desc->status = 0;
	desc->rsvd1 = 0;
}

static int vrnic_eth_rx_buf_alloc(struct vrnic_eth *eth,
				  struct vrnic_eth_buf *buf, u32 len,
				  bool in_napi)
{
	struct sk_buff *skb;
	dma_addr_t dma;

	if (in_napi)
		skb = napi_alloc_skb(&eth->napi, len);
	else
		skb = __netdev_alloc_skb_ip_align(eth->netdev, len, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;

	dma = dma_map_single(eth->dmadev, skb->data, len, DMA_FROM_DEVICE);
	if (dma_mapping_error(eth->dmadev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}

	buf->skb = skb;
	buf->dma = dma;
	buf->len = len;
	return 0;
}

static void vrnic_eth_rx_clean(struct vrnic_eth *eth,
			       struct vrnic_eth_ring *rx)
{
	unsigned int i;

	for (i = 0; i < rx->depth; i++) {
		struct vrnic_eth_buf *buf = &rx->bufs[i];

		if (!buf->skb)
			continue;
		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
}

static int vrnic_eth_rx_fill(struct vrnic_eth *eth,
			     struct vrnic_eth_ring *rx, u32 buf_len)
{
	u16 i;
	int err;

	for (i = 0; i < rx->depth; i++) {
		err = vrnic_eth_rx_buf_alloc(eth, &rx->bufs[i], buf_len, false);
		if (err) {
			vrnic_eth_rx_clean(eth, rx);
			return err;
		}
		vrnic_eth_rx_post(rx, i);
	}
	/* Every slot is posted: pi is a full ring ahead of ci. */
	rx->pi = rx->depth;
	return 0;
}

/* Unmap and free frames the device never completed (rings are idle). */
static void vrnic_eth_tx_clean(struct vrnic_eth *eth)
{
	struct vrnic_eth_ring *tx = &eth->tx;

	for (; tx->ci != tx->pi; tx->ci++) {
		struct vrnic_eth_buf *buf =
			&tx->bufs[vrnic_idx_slot(tx->ci, tx->log_depth)];

		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_TO_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
		DEV_STATS_INC(eth->netdev, tx_dropped);
	}
	netdev_reset_queue(eth->netdev);
}

static void vrnic_eth_tx_complete(struct vrnic_eth *eth, int budget)
{
	struct vrnic_eth_ring *tx = &eth->tx;
	struct net_device *netdev = eth->netdev;
	unsigned int pkts = 0, bytes = 0, ok_pkts = 0, ok_bytes = 0;
	/* Pairs with the release in start_xmit: bufs[] is filled in. */
	u16 pi = smp_load_acquire(&tx->pi);
	u16 ci = tx->ci;

	while (ci != pi) {
		u16 idx = vrnic_idx_slot(ci, tx->log_depth);
		struct vrnic_eth_buf *buf = &tx->bufs[idx];
		u16 status;

		/* The device writes status last. */
		status = le16_to_cpu(READ_ONCE(tx->desc[idx].status));
		if (!(status & VRNIC_ETH_STS_DONE))
			break;

		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_TO_DEVICE);
		pkts++;
		bytes += buf->len;
		if (unlikely(status & VRNIC_ETH_STS_ERROR)) {
			DEV_STATS_INC(netdev, tx_errors);
		} else {
			ok_pkts++;
			ok_bytes += buf->len;
		}
		napi_consume_skb(buf->skb, budget);
		buf->skb = NULL;
		ci++;
	}

	if (!pkts)
		return;

	WRITE_ONCE(tx->ci, ci);
	netdev_completed_queue(netdev, pkts, bytes);
	dev_sw_netstats_tx_add(netdev, ok_pkts, ok_bytes);

	/*
	 * Publish ci before testing the queue state; pairs with the barrier
	 * in start_xmit after it stops the queue.
	 */
	smp_mb();
	if (unlikely(netif_queue_stopped(netdev)) &&
	    vrnic_eth_tx_free(tx) >= min_t(u16, VRNIC_ETH_TX_WAKE,
					   tx->depth / 2))
		netif_wake_queue(netdev);
}

static int vrnic_eth_rx(struct vrnic_eth *eth, int budget)
{
	struct vrnic_eth_ring *rx = &eth->rx;
	struct net_device *netdev = eth->netdev;
	int done = 0;

	while (done < budget) {
		u16 idx = vrnic_idx_slot(rx->ci, rx->log_depth);
		struct vrnic_eth_buf *buf = &rx->bufs[idx];
		struct vrnic_eth_desc *desc = &rx->desc[idx];
		struct vrnic_eth_buf fresh;
		struct sk_buff *skb;
		u16 status, len;

		/* The device writes status (done) after len and the frame. */
		status = le16_to_cpu(READ_ONCE(desc->status));
		if (!(status & VRNIC_ETH_STS_DONE))
			break;
		dma_rmb();
		len = le16_to_cpu(desc->len);
		done++;

		if (unlikely((status & VRNIC_ETH_STS_ERROR) || len < ETH_HLEN ||
			     len > eth->rx_buf_len)) {
			DEV_STATS_INC(netdev, rx_errors);
			goto repost;	/* the device may reuse the buffer */
		}

		if (unlikely(vrnic_eth_rx_buf_alloc(eth, &fresh,
						    eth->rx_buf_len, true))) {
			DEV_STATS_INC(netdev, rx_dropped);
			goto repost;	/* keep the ring full, drop the frame */
		}

		skb = buf->skb;
		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_FROM_DEVICE);
		*buf = fresh;

		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, netdev);
		dev_sw_netstats_rx_add(netdev, len);
		napi_gro_receive(&eth->napi, skb);
repost:
		/* The slot just consumed is the one a full ring posts next. */
		vrnic_eth_rx_post(rx, idx);
		rx->ci++;
		rx->pi++;
	}

	/* writel orders the descriptor writes before the doorbell. */
	if (done)
		vrnic_reg_write(eth->core, VRNIC_REG_ETH_RX_PI,
				FIELD_PREP(VRNIC_INDEX_MASK, rx->pi));
	return done;
}

static void vrnic_eth_arm(struct vrnic_eth *eth)
{
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_TX_ARM,
			FIELD_PREP(VRNIC_INDEX_MASK, eth->tx.ci));
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_RX_ARM,
			FIELD_PREP(VRNIC_INDEX_MASK, eth->rx.ci));
}

static int vrnic_eth_poll(struct napi_struct *napi, int budget)
{
	struct vrnic_eth *eth = container_of(napi, struct vrnic_eth, napi);
	int done;

	/* TX completions do not count against the budget. */
	vrnic_eth_tx_complete(eth, budget);
	done = vrnic_eth_rx(eth, budget);

	/* Re-arm with the current ci: fires at once if more is done. */
	if (done < budget && napi_complete_done(napi, done))
		vrnic_eth_arm(eth);

	return done;
}

static irqreturn_t vrnic_eth_irq_handler(int irq, void *data)
{
	struct vrnic_eth *eth = data;

	/* The vector fires once per arm: nothing to mask. */
	napi_schedule_irqoff(&eth->napi);
	return IRQ_HANDLED;
}

static void vrnic_eth_hw_start(struct vrnic_eth *eth)
{
	struct vrnic_core *core = eth->core;

	vrnic_reg_write(core, VRNIC_REG_ETH_TX_BASE_LO,
			lower_32_bits(eth->tx.dma));
	vrnic_reg_write(core, VRNIC_REG_ETH_TX_BASE_HI,
			upper_32_bits(eth->tx.dma));
	vrnic_reg_write(core, VRNIC_REG_ETH_TX_CFG,
			VRNIC_RING_CFG_ENABLE |
			FIELD_PREP(VRNIC_RING_CFG_LOG_DEPTH_MASK,
				   eth->tx.log_depth));

	vrnic_reg_write(core, VRNIC_REG_ETH_RX_BASE_LO,
			lower_32_bits(eth->rx.dma));
	vrnic_reg_write(core, VRNIC_REG_ETH_RX_BASE_HI,
			upper_32_bits(eth->rx.dma));
	vrnic_reg_write(core, VRNIC_REG_ETH_RX_CFG,
			VRNIC_RING_CFG_ENABLE |
			FIELD_PREP(VRNIC_RING_CFG_LOG_DEPTH_MASK,
				   eth->rx.log_depth));
	vrnic_reg_write(core, VRNIC_REG_ETH_RX_PI,
			FIELD_PREP(VRNIC_INDEX_MASK, eth->rx.pi));
}

/* Back to idle before the writes return: no DMA to the rings after this. */
static void vrnic_eth_hw_stop(struct vrnic_eth *eth)
{
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_TX_CFG, 0);
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_RX_CFG, 0);
	vrnic_reg_read(eth->core, VRNIC_REG_ETH_RX_CFG);	/* flush */
}

/*
 * Allocate a TX ring and a filled RX ring of buf_len-byte buffers, without
 * touching the running ones: the MTU change builds the new rings first, so
 * that it either completes or leaves the old rings running.
 */
static int vrnic_eth_rings_alloc(struct vrnic_eth *eth,
				 struct vrnic_eth_ring *tx,
				 struct vrnic_eth_ring *rx, u32 buf_len)
{
	u8 log_depth = min3(eth->core->eth_max_log_depth,
			    (u8)VRNIC_ETH_MAX_LOG_DEPTH,
			    (u8)VRNIC_ETH_LOG_DEPTH);
	int err;

	err = vrnic_eth_ring_alloc(eth, tx, log_depth);
	if (err)
		return err;

	err = vrnic_eth_ring_alloc(eth, rx, log_depth);
	if (err)
		goto err_free_tx;

	err = vrnic_eth_rx_fill(eth, rx, buf_len);
	if (err)
		goto err_free_rx;
	return 0;

err_free_rx:
	vrnic_eth_ring_free(eth, rx);
err_free_tx:
	vrnic_eth_ring_free(eth, tx);
	return err;
}

/* Free rings the device no longer uses (TX already cleaned). */
static void vrnic_eth_rings_free(struct vrnic_eth *eth,
				 struct vrnic_eth_ring *tx,
				 struct vrnic_eth_ring *rx)
{
	vrnic_eth_rx_clean(eth, rx);
	vrnic_eth_ring_free(eth, rx);
	vrnic_eth_ring_free(eth, tx);
}

/* Hand eth->tx and eth->rx to the device and start NAPI and the queue. */
static void vrnic_eth_start(struct vrnic_eth *eth)
{
	netdev_reset_queue(eth->netdev);
	vrnic_eth_hw_start(eth);
	napi_enable(&eth->napi);
	vrnic_eth_arm(eth);
	netif_start_queue(eth->netdev);
}

/* Stop the queue, NAPI and the device's DMA; drop the frames not sent. */
static void vrnic_eth_halt(struct vrnic_eth *eth)
{
	netif_tx_disable(eth->netdev);
	napi_disable(&eth->napi);
	vrnic_eth_hw_stop(eth);
	vrnic_eth_tx_clean(eth);
}

static int vrnic_eth_up(struct vrnic_eth *eth)
{
	u32 buf_len = eth->netdev->mtu + VRNIC_ETH_FRAME_OVERHEAD;
	int err;

	err = vrnic_eth_rings_alloc(eth, &eth->tx, &eth->rx, buf_len);
	if (err)
		return err;

	eth->rx_buf_len = buf_len;
	vrnic_eth_start(eth);
	return 0;
}

static void vrnic_eth_down(struct vrnic_eth *eth)
{
	vrnic_eth_halt(eth);
	vrnic_eth_rings_free(eth, &eth->tx, &eth->rx);
}

static int vrnic_eth_open(struct net_device *netdev)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	int err;

	err = vrnic_eth_up(eth);
	if (err)
		return err;

	/* The port may become ACTIVE. */
	vrnic_netdev_set_up(eth->core, true);
	return 0;
}

static int vrnic_eth_stop(struct net_device *netdev)
{
	struct vrnic_eth *eth = netdev_priv(netdev);

	/* The port goes DOWN. */
	vrnic_netdev_set_up(eth->core, false);
	vrnic_eth_down(eth);
	return 0;
}

static netdev_tx_t vrnic_eth_start_xmit(struct sk_buff *skb,
					struct net_device *netdev)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	struct vrnic_eth_ring *tx = &eth->tx;
	struct vrnic_eth_desc *desc;
	struct vrnic_eth_buf *buf;
	dma_addr_t dma;
	u16 pi = tx->pi;
	u16 idx;
	u32 len;

	/* The descriptor length is 16 bits (the MTU keeps frames far below). */
	if (unlikely(skb->len > U16_MAX)) {
		dev_kfree_skb_any(skb);
		DEV_STATS_INC(netdev, tx_dropped);
		goto ring_db;
	}
	/* Pad runts to the Ethernet minimum; frees the skb on failure. */
	if (eth_skb_pad(skb)) {
		DEV_STATS_INC(netdev, tx_dropped);
		goto ring_db;
	}

	/* Cannot happen: the queue is stopped while the ring is full. */
	if (unlikely(!vrnic_eth_tx_free(tx))) {
		netif_stop_queue(netdev);
		netdev_err_once(netdev, "TX ring full with the queue awake\n");
		return NETDEV_TX_BUSY;
	}

	len = skb->len;
	dma = dma_map_single(eth->dmadev, skb->data, len, DMA_TO_DEVICE);
	if (unlikely(dma_mapping_error(eth->dmadev, dma))) {
		dev_kfree_skb_any(skb);
		DEV_STATS_INC(netdev, tx_dropped);
		goto ring_db;
	}

	idx = vrnic_idx_slot(pi, tx->log_depth);
	buf = &tx->bufs[idx];
	buf->skb = skb;
	buf->dma = dma;
	buf->len = len;

	desc = &tx->desc[idx];
	desc->addr = cpu_to_le64(dma);
	desc->len = cpu_to_le16(len);
	desc->rsvd0 = 0;
	desc->status = 0;
	desc->rsvd1 = 0;

	skb_tx_timestamp(skb);
	/* Pairs with the acquire in tx_complete. */
	smp_store_release(&tx->pi, pi + 1);

	if (unlikely(!vrnic_eth_tx_free(tx))) {
		netif_stop_queue(netdev);
		/*
		 * Make the stop visible before re-reading ci; pairs with the
		 * barrier in tx_complete, which may have freed slots since.
		 */
		smp_mb();
		if (vrnic_eth_tx_free(tx))
			netif_start_queue(netdev);
	}

	/* Defer the doorbell while the stack has more, unless stopped. */
	if (!__netdev_tx_sent_queue(netdev_get_tx_queue(netdev, 0), len,
				    netdev_xmit_more()))
		return NETDEV_TX_OK;

ring_db:
	/*
	 * Also on the drop paths: an earlier frame may have deferred its
	 * doorbell to this one. writel orders the descriptor before it.
	 */
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_TX_PI,
			FIELD_PREP(VRNIC_INDEX_MASK, tx->pi));
	return NETDEV_TX_OK;
}

static int vrnic_eth_change_mtu(struct net_device *netdev, int new_mtu)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	struct vrnic_core *core = eth->core;
	u32 buf_len = new_mtu + VRNIC_ETH_FRAME_OVERHEAD;
	struct vrnic_eth_ring tx, rx;
	int err;

	if (!netif_running(netdev)) {
		err = vrnic_cmd_set_mtu(&core->cmdq, new_mtu);
		if (err)
			return err;
		WRITE_ONCE(netdev->mtu, new_mtu);
		return 0;
	}

	/*
	 * RX buffers are sized for the MTU: build the new rings while the old
	 * ones run. Past the SET_MTU command nothing can fail, so the change
	 * either completes or leaves the old rings and MTU in place.
	 */
	err = vrnic_eth_rings_alloc(eth, &tx, &rx, buf_len);
	if (err)
		return err;

	err = vrnic_cmd_set_mtu(&core->cmdq, new_mtu);
	if (err) {
		vrnic_eth_rings_free(eth, &tx, &rx);
		return err;
	}

	vrnic_eth_halt(eth);
	swap(eth->tx, tx);
	swap(eth->rx, rx);
	eth->rx_buf_len = buf_len;
	WRITE_ONCE(netdev->mtu, new_mtu);
	vrnic_eth_start(eth);
	/* The old rings, idle since the halt. */
	vrnic_eth_rings_free(eth, &tx, &rx);
	return 0;
}

static int vrnic_eth_set_mac_address(struct net_device *netdev, void *p)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	struct sockaddr *addr = p;
	int err;

	err = eth_prepare_mac_addr_change(netdev, p);
	if (err)
		return err;

	err = vrnic_cmd_set_mac(&eth->core->cmdq, (const u8 *)addr->sa_data);
	if (err)
		return err;

	eth_commit_mac_addr_change(netdev, p);
	return 0;
}

/* Called under the netdev address lock (atomic): a register write only. */
static void vrnic_eth_set_rx_mode(struct net_device *netdev)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	u32 ctrl = 0;

	/* Broadcast and all multicast are always delivered. */
	if (netdev->flags & IFF_PROMISC)
		ctrl |= VRNIC_ETH_CTRL_PROMISC;
	vrnic_reg_write(eth->core, VRNIC_REG_ETH_CTRL, ctrl);
}

static void vrnic_eth_tx_timeout(struct net_device *netdev,
				 unsigned int txqueue)
{
	struct vrnic_eth *eth = netdev_priv(netdev);

	/* The watchdog calls this at most once per watchdog_timeo. */
	netdev_warn(netdev, "TX stalled: pi %u ci %u dev_sts %#x\n",
		    READ_ONCE(eth->tx.pi), READ_ONCE(eth->tx.ci),
		    vrnic_reg_read(eth->core, VRNIC_REG_DEV_STS));
}

static const struct net_device_ops vrnic_netdev_ops = {
	.ndo_open = vrnic_eth_open,
	.ndo_stop = vrnic_eth_stop,
	.ndo_start_xmit = vrnic_eth_start_xmit,
	.ndo_change_mtu = vrnic_eth_change_mtu,
	.ndo_set_mac_address = vrnic_eth_set_mac_address,
	.ndo_set_rx_mode = vrnic_eth_set_rx_mode,
	.ndo_validate_addr = eth_validate_addr,
	.ndo_get_stats64 = dev_get_tstats64,
	.ndo_tx_timeout = vrnic_eth_tx_timeout,
};

static void vrnic_eth_get_drvinfo(struct net_device *netdev,
				  struct ethtool_drvinfo *info)
{
	struct vrnic_eth *eth = netdev_priv(netdev);

	strscpy(info->driver, VRNIC_DRV_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(eth->core->pdev),
		sizeof(info->bus_info));
}

/*
 * The speed comes from QUERY_PORT; ib_get_eth_speed() turns it into the
 * port's IB speed and width. Called under RTNL, may sleep.
 */
static int vrnic_eth_get_link_ksettings(struct net_device *netdev,
					struct ethtool_link_ksettings *ks)
{
	struct vrnic_eth *eth = netdev_priv(netdev);
	struct vrnic_cmd_port_attr attr;
	int err;

	err = vrnic_cmd_query_port(&eth->core->cmdq, VRNIC_PORT_NUM, &attr);
	if (err)
		return err;

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	if (netif_carrier_ok(netdev) && attr.speed_mbps) {
		ks->base.speed = attr.speed_mbps;
		ks->base.duplex = DUPLEX_FULL;
	} else {
		ks->base.speed = SPEED_UNKNOWN;
		ks->base.duplex = DUPLEX_UNKNOWN;
	}
	return 0;
}

static const struct ethtool_ops vrnic_ethtool_ops = {
	.get_drvinfo = vrnic_eth_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = vrnic_eth_get_link_ksettings,
};

/* The permanent MAC: bytes 0..3 in MAC_LO, bytes 4..5 in MAC_HI 15:0. */
static void vrnic_eth_init_mac(struct vrnic_core *core,
			       struct net_device *netdev)
{
	u8 mac[ETH_ALEN];

	put_unaligned_le32(vrnic_reg_read(core, VRNIC_REG_MAC_LO), mac);
	put_unaligned_le16(lower_16_bits(vrnic_reg_read(core,
							VRNIC_REG_MAC_HI)),
			   mac + 4);
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(netdev, mac);
		return;
	}

	eth_hw_addr_random(netdev);
	dev_warn(&core->pdev->dev, "invalid permanent MAC %pM, using %pM\n",
		 mac, netdev->dev_addr);
}

int vrnic_netdev_init(struct vrnic_core *core)
{
	struct pci_dev *pdev = core->pdev;
	struct net_device *netdev;
	struct vrnic_eth *eth;
	int err;

	netdev = alloc_etherdev(sizeof(*eth));
	if (!netdev)
		return -ENOMEM;

	SET_NETDEV_DEV(netdev, &pdev->dev);
	eth = netdev_priv(netdev);
	eth->core = core;
	eth->netdev = netdev;
	eth->dmadev = &pdev->dev;

	netdev->netdev_ops = &vrnic_netdev_ops;
	netdev->ethtool_ops = &vrnic_ethtool_ops;
	netdev->pcpu_stat_type = NETDEV_PCPU_STAT_TSTATS;
	/* SET_MAC works while the rings run. */
	netdev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
	netdev->watchdog_timeo = VRNIC_ETH_TX_TIMEOUT;
	netdev->min_mtu = ETH_MIN_MTU;
	/* Descriptor lengths are 16 bits wide. */
	netdev->max_mtu = min_t(u32, core->eth_max_mtu,
				U16_MAX - VRNIC_ETH_FRAME_OVERHEAD);
	if (netdev->mtu > netdev->max_mtu)
		netdev->mtu = netdev->max_mtu;

	vrnic_eth_init_mac(core, netdev);

	/* A reset cleared the device's MAC and MTU: program ours. */
	err = vrnic_cmd_set_mac(&core->cmdq, netdev->dev_addr);
	if (err)
		goto err_free_netdev;
	err = vrnic_cmd_set_mtu(&core->cmdq, netdev->mtu);
	if (err)
		goto err_free_netdev;

	netif_napi_add(netdev, &eth->napi, vrnic_eth_poll);

	snprintf(eth->irq_name, sizeof(eth->irq_name), "vrnic-eth@%s",
		 pci_name(pdev));
	err = request_irq(pci_irq_vector(pdev, VRNIC_VEC_ETH),
			  vrnic_eth_irq_handler, 0, eth->irq_name, eth);
	if (err)
		goto err_napi_del;

	netif_carrier_off(netdev);
	core->netdev = netdev;
	err = register_netdev(netdev);
	if (err)
		goto err_free_irq;

	vrnic_netdev_set_live(core, true);
	return 0;

err_free_irq:
	core->netdev = NULL;
	free_irq(pci_irq_vector(pdev, VRNIC_VEC_ETH), eth);
err_napi_del:
	netif_napi_del(&eth->napi);
err_free_netdev:
	free_netdev(netdev);
	return err;
}

void vrnic_netdev_uninit(struct vrnic_core *core)
{
	struct net_device *netdev = core->netdev;
	struct vrnic_eth *eth = netdev_priv(netdev);

	vrnic_netdev_set_live(core, false);
	unregister_netdev(netdev);	/* runs ndo_stop if it is up */
	free_irq(pci_irq_vector(core->pdev, VRNIC_VEC_ETH), eth);
	netif_napi_del(&eth->napi);
	core->netdev = NULL;
	free_netdev(netdev);
}
