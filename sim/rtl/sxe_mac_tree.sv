// One SXE MAC tree: LANES multipliers feeding a pipelined adder tree and an accumulator.
// Ground truth for the closed-form timing in sim/model/sxe_timing.h (issue 8).
//
// Arithmetic (fixed-point stand-in for FP16 x FP16 -> FP32): operands are signed 16-bit
// (same width, so the same weight-stream bytes per lane as FP16), products are exact 32-bit,
// the tree grows log2(LANES) bits, and the accumulator is 64 bits wide. Results are exact
// integers, so the harness compares them with a C++ reference for equality.
//
// Timing contract (what mac_tree_cycles() assumes):
//   * one beat = LANES weights + the matching LANES activations, accepted on a rising edge
//     when in_valid && in_ready; the tree takes one beat per cycle, with no bubble between
//     dot products (in_last marks the final beat of one output element);
//   * DEPTH is the number of register stages from an accepted beat to the delivered result,
//     the accumulator/output register included: the result of a dot product whose last beat
//     is accepted at edge t is in out_y (out_valid high) after edge t + DEPTH - 1.
//   The DEPTH - 1 stages in front of the accumulator are spread evenly over the multiplier
//   and the log2(LANES) adder levels; beyond one register per level, the remaining stages
//   are retiming registers after the tree (where a real FP16 tree has its normalise/round).
//
// Handshake: a global-stall pipeline. When the output register holds a result the consumer
// has not taken (out_valid && !out_ready) every stage holds and in_ready drops, so output
// back-pressure propagates to the weight stream; a slow stream (in_valid low) just leaves
// bubbles, which drain as the tree fills. Lanes at or above cfg_lanes are gated to zero, so
// one tree of LANES multipliers serves any narrower configuration.
module sxe_mac_tree #(
    parameter int LANES = 64,   // multipliers (a power of two)
    parameter int DEPTH = 8,    // register stages, input beat to result (>= 1)
    parameter int DW    = 16,   // operand width (signed)
    parameter int AW    = 64    // accumulator width
) (
    input  logic                    clk,
    input  logic                    rst,        // synchronous, active high
    input  logic [$clog2(LANES):0]  cfg_lanes,  // active lanes, 1 .. LANES
    input  logic [LANES*DW-1:0]     in_w,       // lane i in bits [i*DW +: DW]
    input  logic [LANES*DW-1:0]     in_x,
    input  logic                    in_last,
    input  logic                    in_valid,
    output logic                    in_ready,
    output logic [AW-1:0]           out_y,      // two's complement
    output logic                    out_valid,
    input  logic                    out_ready
);
  localparam int L = $clog2(LANES);  // adder levels
  localparam int TW = 2 * DW + L;    // tree width: a sum of LANES products cannot overflow it
  localparam int STEPS = L + 1;      // combinational steps: the multiply and L adder levels
  localparam int R = DEPTH - 1;      // registers in front of the accumulator
  localparam int EXTRA = R > STEPS ? R - STEPS : 0;

  // Whether step s ends in a register: R registers spread evenly over the steps, the last
  // step always registered when R >= 1 (so the accumulator's adder sees a register output).
  function automatic bit registered(int s);
    if (R >= STEPS) return 1'b1;
    return ((s + 1) * R) / STEPS > (s * R) / STEPS;
  endfunction

  // Elaboration-time checks (SystemVerilog elaboration system tasks: no logic).
  generate
    if (LANES < 1 || (1 << L) != LANES) begin : bad_lanes
      $error("sxe_mac_tree: LANES=%0d is not a power of two", LANES);
    end
    if (DEPTH < 1) begin : bad_depth
      $error("sxe_mac_tree: DEPTH=%0d < 1", DEPTH);
    end
  endgenerate

  logic stall;
  assign stall = out_valid && !out_ready;
  assign in_ready = !stall;

  // ---- steps 0..L: multiply, then halve the vector per adder level --------------------
  // Step s has N = LANES >> s live partial sums (LANES products at step 0); step[s].q is
  // its result after the optional register, read by step s + 1.
  genvar s, i;
  generate
    for (s = 0; s < STEPS; s++) begin : step
      localparam int N = LANES >> s;
      logic [N-1:0][TW-1:0] d, q;
      logic                 dv, dl, qv, ql;
      for (i = 0; i < N; i++) begin : node
        if (s == 0) begin : mul
          logic signed [DW-1:0] w, x;
          assign w = in_w[i*DW +: DW];
          assign x = in_x[i*DW +: DW];
          assign d[i] = (i < int'(cfg_lanes)) ? TW'(w * x) : '0;
        end else begin : add
          assign d[i] = TW'(signed'(step[s-1].q[2*i]) + signed'(step[s-1].q[2*i+1]));
        end
      end
      if (s == 0) begin : src
        assign dv = in_valid && in_ready;
        assign dl = in_last;
      end else begin : src
        assign dv = step[s-1].qv;
        assign dl = step[s-1].ql;
      end
      if (registered(s)) begin : reg_stage
        always_ff @(posedge clk) begin
          if (rst) qv <= 1'b0;
          else if (!stall) qv <= dv;
          if (!stall) begin
            q  <= d;
            ql <= dl;
          end
        end
      end else begin : wire_stage
        assign q  = d;
        assign qv = dv;
        assign ql = dl;
      end
    end
  endgenerate

  // ---- retiming stages after the tree (DEPTH - 1 > L + 1) ------------------------------
  logic [TW-1:0] tree_sum;
  logic          tree_v, tree_l;
  generate
    if (EXTRA == 0) begin : no_extra
      assign tree_sum = step[STEPS-1].q[0];
      assign tree_v   = step[STEPS-1].qv;
      assign tree_l   = step[STEPS-1].ql;
    end else begin : extra
      logic [TW-1:0] sum_q [EXTRA];
      logic          v_q [EXTRA], l_q [EXTRA];
      always_ff @(posedge clk) begin
        if (rst) for (int k = 0; k < EXTRA; k++) v_q[k] <= 1'b0;
        else if (!stall) begin
          v_q[0] <= step[STEPS-1].qv;
          for (int k = 1; k < EXTRA; k++) v_q[k] <= v_q[k-1];
        end
        if (!stall) begin
          sum_q[0] <= step[STEPS-1].q[0];
          l_q[0]   <= step[STEPS-1].ql;
          for (int k = 1; k < EXTRA; k++) begin
            sum_q[k] <= sum_q[k-1];
            l_q[k]   <= l_q[k-1];
          end
        end
      end
      assign tree_sum = sum_q[EXTRA-1];
      assign tree_v   = v_q[EXTRA-1];
      assign tree_l   = l_q[EXTRA-1];
    end
  endgenerate

  // ---- accumulator / output register (the DEPTH-th stage) ------------------------------
  // `fresh` means the next tree sum starts a new dot product. A last beat writes
  // acc + sum straight to the output register, so consecutive outputs need no bubble.
  logic [AW-1:0] acc, base, sum_ext;
  logic          fresh;
  assign base = fresh ? '0 : acc;
  assign sum_ext = AW'(signed'(tree_sum));

  always_ff @(posedge clk) begin
    if (rst) begin
      fresh     <= 1'b1;
      out_valid <= 1'b0;
    end else if (!stall) begin
      out_valid <= tree_v && tree_l;
      if (tree_v) fresh <= tree_l;
    end
    if (!stall && tree_v) begin
      if (tree_l) out_y <= base + sum_ext;
      else acc <= base + sum_ext;
    end
  end
endmodule
