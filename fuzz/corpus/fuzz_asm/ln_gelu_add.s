.program ln_gelu_add
.buffer ln_weight hbm:0x0 f32[1024] weight
.buffer ln_bias hbm:0x1000 f32[1024] weight
.buffer x hbm:0x2000 f32[128, 1024] input
.buffer residual hbm:0x82000 f32[128, 1024] output
.kernel 0 k0_ln_mean_x15
  dma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, 1]
  dma.load f32 [1, 1024] lm:0x1000 <- hbm:0x1000 [0, 1]
  loop 9
  dma.load f32 [7, 1024] lm:0x2000 <- hbm:0x2000 [1024, 1] step hbm:+0xe000
  vxe.rmean [7, 1024] lm:0x9000 <- lm:0x2000 [1024, 1]
  vxe.sub [7, 1024] lm:0x9040 <- lm:0x2000 [1024, 1], lm:0x9000 [1, 0]
  vxe.mul [7, 1024] lm:0x10040 <- lm:0x9040 [1024, 1], lm:0x9040 [1024, 1]
  vxe.rmean [7, 1024] lm:0x9000 <- lm:0x10040 [1024, 1]
  vxe.add [7, 1] lm:0x10040 <- lm:0x9000 [1, 0], #1e-05
  vxe.rsqrt [7, 1] lm:0x9000 <- lm:0x10040 [1, 0]
  vxe.mul [7, 1024] lm:0x10040 <- lm:0x9040 [1024, 1], lm:0x9000 [1, 0]
  vxe.mul [7, 1024] lm:0x9000 <- lm:0x10040 [1024, 1], lm:0x0 [0, 1]
  vxe.add [7, 1024] lm:0x10000 <- lm:0x9000 [1024, 1], lm:0x1000 [0, 1]
  vxe.mul [7, 1024] lm:0x9000 <- lm:0x10000 [1024, 1], #0.7071067811865476
  vxe.erf [7, 1024] lm:0x17000 <- lm:0x9000 [1024, 1]
  vxe.add [7, 1024] lm:0x9000 <- lm:0x17000 [1024, 1], #1.0
  vxe.mul [7, 1024] lm:0x17000 <- lm:0x10000 [1024, 1], lm:0x9000 [1024, 1]
  vxe.mul [7, 1024] lm:0x9000 <- lm:0x17000 [1024, 1], #0.5
  vxe.add [7, 1024] lm:0x10000 <- lm:0x9000 [1024, 1], lm:0x2000 [1024, 1]
  dma.store f32 [7, 1024] hbm:0x82000 [1024, 1] <- lm:0x10000 step hbm:+0xe000
  dma.load f32 [7, 1024] lm:0x1e000 <- hbm:0x9000 [1024, 1] step hbm:+0xe000
  vxe.rmean [7, 1024] lm:0x25000 <- lm:0x1e000 [1024, 1]
  vxe.sub [7, 1024] lm:0x25040 <- lm:0x1e000 [1024, 1], lm:0x25000 [1, 0]
  vxe.mul [7, 1024] lm:0x2c040 <- lm:0x25040 [1024, 1], lm:0x25040 [1024, 1]
  vxe.rmean [7, 1024] lm:0x25000 <- lm:0x2c040 [1024, 1]
  vxe.add [7, 1] lm:0x2c040 <- lm:0x25000 [1, 0], #1e-05
  vxe.rsqrt [7, 1] lm:0x25000 <- lm:0x2c040 [1, 0]
  vxe.mul [7, 1024] lm:0x2c040 <- lm:0x25040 [1024, 1], lm:0x25000 [1, 0]
  vxe.mul [7, 1024] lm:0x25000 <- lm:0x2c040 [1024, 1], lm:0x0 [0, 1]
  vxe.add [7, 1024] lm:0x2c000 <- lm:0x25000 [1024, 1], lm:0x1000 [0, 1]
  vxe.mul [7, 1024] lm:0x25000 <- lm:0x2c000 [1024, 1], #0.7071067811865476
  vxe.erf [7, 1024] lm:0x33000 <- lm:0x25000 [1024, 1]
  vxe.add [7, 1024] lm:0x25000 <- lm:0x33000 [1024, 1], #1.0
  vxe.mul [7, 1024] lm:0x33000 <- lm:0x2c000 [1024, 1], lm:0x25000 [1024, 1]
  vxe.mul [7, 1024] lm:0x25000 <- lm:0x33000 [1024, 1], #0.5
  vxe.add [7, 1024] lm:0x2c000 <- lm:0x25000 [1024, 1], lm:0x1e000 [1024, 1]
  dma.store f32 [7, 1024] hbm:0x89000 [1024, 1] <- lm:0x2c000 step hbm:+0xe000
  endloop
  dma.load f32 [2, 1024] lm:0x2000 <- hbm:0x80000 [1024, 1]
  vxe.rmean [2, 1024] lm:0x4000 <- lm:0x2000 [1024, 1]
  vxe.sub [2, 1024] lm:0x4040 <- lm:0x2000 [1024, 1], lm:0x4000 [1, 0]
  vxe.mul [2, 1024] lm:0x6040 <- lm:0x4040 [1024, 1], lm:0x4040 [1024, 1]
  vxe.rmean [2, 1024] lm:0x4000 <- lm:0x6040 [1024, 1]
  vxe.add [2, 1] lm:0x6040 <- lm:0x4000 [1, 0], #1e-05
  vxe.rsqrt [2, 1] lm:0x4000 <- lm:0x6040 [1, 0]
  vxe.mul [2, 1024] lm:0x6040 <- lm:0x4040 [1024, 1], lm:0x4000 [1, 0]
  vxe.mul [2, 1024] lm:0x4000 <- lm:0x6040 [1024, 1], lm:0x0 [0, 1]
  vxe.add [2, 1024] lm:0x6000 <- lm:0x4000 [1024, 1], lm:0x1000 [0, 1]
  vxe.mul [2, 1024] lm:0x4000 <- lm:0x6000 [1024, 1], #0.7071067811865476
  vxe.erf [2, 1024] lm:0x8000 <- lm:0x4000 [1024, 1]
  vxe.add [2, 1024] lm:0x4000 <- lm:0x8000 [1024, 1], #1.0
  vxe.mul [2, 1024] lm:0x8000 <- lm:0x6000 [1024, 1], lm:0x4000 [1024, 1]
  vxe.mul [2, 1024] lm:0x4000 <- lm:0x8000 [1024, 1], #0.5
  vxe.add [2, 1024] lm:0x6000 <- lm:0x4000 [1024, 1], lm:0x2000 [1024, 1]
  dma.store f32 [2, 1024] hbm:0x100000 [1024, 1] <- lm:0x6000
  halt
