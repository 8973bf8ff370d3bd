.program chain
.buffer x hbm:0x0 f32[8, 64] input
.buffer m hbm:0x800 f32[8, 1] input
.buffer y hbm:0x1000 f32[8, 64] output
.buffer s hbm:0x1800 f32[8, 1] output
.kernel 0 softmax
  loop 2
  dma.load f32 [4, 64] lm:0x0 <- hbm:0x0 [64, 1] step hbm:+0x400 lm:+0x2000
  dma.load f32 [4, 1] lm:0x400 <- hbm:0x800 [1, 1] step hbm:+0x10 lm:+0x2000
  vxe.sub.exp [4, 64] lm:0x800 <- lm:0x0 [64, 1], lm:0x400 [1, 0] => rsum lm:0x1000 step lm:+0x2000
  vxe.reciprocal [4, 1] lm:0x1100 <- lm:0x1000 [1, 1] step lm:+0x2000
  vxe.mul.neg [4, 64] lm:0x800 [64, 1] <- lm:0x800 [64, 1], lm:0x1100 [1, 0] => rmax lm:0x1200 step lm:+0x2000
  dma.store f32 [4, 64] hbm:0x1000 [64, 1] <- lm:0x800 step hbm:+0x400 lm:+0x2000
  dma.store f32 [4, 1] hbm:0x1800 [1, 1] <- lm:0x1200 step hbm:+0x10 lm:+0x2000
  endloop
  halt
