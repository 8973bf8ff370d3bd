.program p
.buffer x hbm:0x0 f32[4, 8] input
.buffer y hbm:0x80 f32[4, 8] output
.kernel 0 k0
  dma.load f32 [4, 8] lm:0x0 <- hbm:0x0 [8, 1]
  vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]
  dma.store f32 [4, 8] hbm:0x80 [8, 1] <- lm:0x100
  halt
