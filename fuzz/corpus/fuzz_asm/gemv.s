.program gemv
.buffer weight hbm:0x0 f16[4096, 4096] weight
.buffer x hbm:0x2000000 f16[1, 4096] input
.buffer y hbm:0x2002000 f16[1, 4096] output
.kernel 0 k0_y
  dma.load f16 [1, 4096] lm:0x0 <- hbm:0x2000000 [0, 1]
  sxe.gemm f16 [1, 4096, 4096] lm:0x4000 <- lm:0x0 [0, 1], hbm:0x0 [1, 4096]
  dma.store f16 [1, 4096] hbm:0x2002000 [0, 1] <- lm:0x4000
  halt
