.program softmax
.buffer scores hbm:0x0 f32[128, 1024] input
.buffer probs_div hbm:0x80000 f32[128, 1024] output
.kernel 0 k0_probs_amax_x5
  loop 4
  dma.load f32 [15, 1024] lm:0x0 <- hbm:0x0 [1024, 1] step hbm:+0x1e000
  vxe.rmax [15, 1024] lm:0xf000 <- lm:0x0 [1024, 1]
  vxe.sub [15, 1024] lm:0xf040 <- lm:0x0 [1024, 1], lm:0xf000 [1, 0]
  vxe.exp [15, 1024] lm:0x0 <- lm:0xf040 [1024, 1]
  vxe.rsum [15, 1024] lm:0xf000 <- lm:0x0 [1024, 1]
  vxe.div [15, 1024] lm:0xf040 <- lm:0x0 [1024, 1], lm:0xf000 [1, 0]
  dma.store f32 [15, 1024] hbm:0x80000 [1024, 1] <- lm:0xf040 step hbm:+0x1e000
  dma.load f32 [15, 1024] lm:0x1e040 <- hbm:0xf000 [1024, 1] step hbm:+0x1e000
  vxe.rmax [15, 1024] lm:0x2d040 <- lm:0x1e040 [1024, 1]
  vxe.sub [15, 1024] lm:0x2d080 <- lm:0x1e040 [1024, 1], lm:0x2d040 [1, 0]
  vxe.exp [15, 1024] lm:0x1e040 <- lm:0x2d080 [1024, 1]
  vxe.rsum [15, 1024] lm:0x2d040 <- lm:0x1e040 [1024, 1]
  vxe.div [15, 1024] lm:0x2d080 <- lm:0x1e040 [1024, 1], lm:0x2d040 [1, 0]
  dma.store f32 [15, 1024] hbm:0x8f000 [1024, 1] <- lm:0x2d080 step hbm:+0x1e000
  endloop
  dma.load f32 [8, 1024] lm:0x0 <- hbm:0x78000 [1024, 1]
  vxe.rmax [8, 1024] lm:0x8000 <- lm:0x0 [1024, 1]
  vxe.sub [8, 1024] lm:0x8040 <- lm:0x0 [1024, 1], lm:0x8000 [1, 0]
  vxe.exp [8, 1024] lm:0x0 <- lm:0x8040 [1024, 1]
  vxe.rsum [8, 1024] lm:0x8000 <- lm:0x0 [1024, 1]
  vxe.div [8, 1024] lm:0x8040 <- lm:0x0 [1024, 1], lm:0x8000 [1, 0]
  dma.store f32 [8, 1024] hbm:0xf8000 [1024, 1] <- lm:0x8040
  halt
