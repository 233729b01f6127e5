// Weight-stationary N x N systolic array with a result FIFO: the RTL twin of
// the C++ MXU (mxu/mxu.hpp), bit for bit. See mxu/rtl/README.md.
//
// Contract:
//  * Weights load from above, one row (N bf16, element c = output column c)
//    per accepted w_valid: the row enters the top PE row's shadow registers
//    and every shadow row moves down one, so after N loads the LAST row loaded
//    is K row 0 (as the C++ MXU stacks its pushes). w_ready is low while a
//    latch is still travelling through the array (2N - 2 cycles after a
//    latching push) and in the cycle of a latching push itself.
//  * LHS: an accepted lhs_valid pushes one row (N bf16, element k = K row k).
//    With lhs_latch the shadow weights become active for that row and every
//    later one (double buffering: the next tile's weights load while the
//    current one multiplies). Element k enters PE row k after k cycles of skew
//    and moves right one PE per cycle; partial sums start at +0.0 on the top row
//    and flow down, PE(k, c) adding bf16(a[k]) * bf16(w[k][c]) in f32, so
//    result[c] = (((+0 + a0 w0c) + a1 w1c) + ...) in increasing k, exactly the
//    C++ MXU's order and rounding.
//  * Results: column c is de-skewed by N - 1 - c cycles, then the whole row
//    enters the FIFO; res_valid / res_row show its head, res_pop dequeues it.
//    A row pushed at clock edge t is at the FIFO head after edge t + 2N when
//    the FIFO is empty (latency 2N: N PE rows + N - 1 columns of skew + the
//    FIFO write); one row per cycle streams through.
//  * lhs_ready is low when FIFO_ROWS rows are pushed and not yet popped (the
//    FIFO reserves room for every row in flight, so the array never stalls);
//    FIFO_ROWS >= 2N + 2 sustains one row per cycle with a consumer that pops
//    each result in the cycle after it appears. busy: rows in flight.
`timescale 1ns / 1ps

module systolic_array #(
    parameter int N = 8,
    parameter int FIFO_ROWS = 2 * N + 2
) (
    input  logic            clk,
    input  logic            rst,
    input  logic            w_valid,
    input  logic [16*N-1:0] w_row,
    output logic            w_ready,
    input  logic            lhs_valid,
    input  logic            lhs_latch,
    input  logic [16*N-1:0] lhs_row,
    output logic            lhs_ready,
    output logic            res_valid,
    output logic [32*N-1:0] res_row,
    input  logic            res_pop,
    output logic            busy
);
  localparam int PTR_BITS = $clog2(FIFO_ROWS);
  localparam int COUNT_BITS = $clog2(FIFO_ROWS + 1);
  localparam int WAVE_BITS = $clog2(2 * N);

  logic push, pop, w_shift;
  logic [COUNT_BITS-1:0] reserved_q;  // rows pushed and not yet popped
  logic [COUNT_BITS-1:0] count_q;     // rows in the FIFO
  logic [WAVE_BITS-1:0] latch_wave_q; // cycles until the last PE has latched

  assign push = lhs_valid && lhs_ready;
  assign pop = res_pop && res_valid;
  assign lhs_ready = reserved_q < COUNT_BITS'(FIFO_ROWS);
  assign w_ready = latch_wave_q == 0 && !(push && lhs_latch);
  assign w_shift = w_valid && w_ready;
  assign busy = reserved_q != count_q;

  // 1. Skew: K row k of a pushed row reaches PE row k k cycles after row 0.
  logic [N-1:0] skew_valid_q, skew_latch_q;  // bit k: valid / latch of PE row k's input
  always_ff @(posedge clk) begin
    if (rst) begin
      skew_valid_q <= '0;
      skew_latch_q <= '0;
    end else begin
      skew_valid_q <= {skew_valid_q[N-2:0], push};
      skew_latch_q <= {skew_latch_q[N-2:0], push && lhs_latch};
    end
  end

  logic [15:0] a_link[N][N+1];  // a_link[k][c]: operand into PE(k, c)
  logic        v_link[N][N+1];
  logic        l_link[N][N+1];
  logic [31:0] p_link[N+1][N];  // p_link[k][c]: partial sum into PE(k, c)
  logic [15:0] w_link[N+1][N];  // w_link[k][c]: shadow weight above PE(k, c)

  for (genvar k = 0; k < N; k++) begin : skew
    for (genvar j = 0; j <= k; j++) begin : stage
      logic [15:0] q;
      if (j == 0) begin : load
        always_ff @(posedge clk) q <= push ? lhs_row[16*k+:16] : '0;
      end else begin : shift
        always_ff @(posedge clk) q <= stage[j-1].q;
      end
    end
    assign a_link[k][0] = stage[k].q;
    assign v_link[k][0] = skew_valid_q[k];
    assign l_link[k][0] = skew_latch_q[k];
  end

  // 2. The PE grid.
  for (genvar c = 0; c < N; c++) begin : top
    assign p_link[0][c] = 32'h0000_0000;
    assign w_link[0][c] = w_row[16*c+:16];
  end
  for (genvar k = 0; k < N; k++) begin : row
    for (genvar c = 0; c < N; c++) begin : col
      mxu_pe pe (
          .clk(clk),
          .rst(rst),
          .w_shift(w_shift),
          .w_in(w_link[k][c]),
          .a_valid_in(v_link[k][c]),
          .a_latch_in(l_link[k][c]),
          .a_in(a_link[k][c]),
          .psum_in(p_link[k][c]),
          .w_shadow_q(w_link[k+1][c]),
          .a_valid_q(v_link[k][c+1]),
          .a_latch_q(l_link[k][c+1]),
          .a_q(a_link[k][c+1]),
          .psum_q(p_link[k+1][c])
      );
    end
  end

  // 3. De-skew: column c waits N - 1 - c cycles for the last column.
  logic [32*N-1:0] out_row;
  logic out_valid;
  assign out_valid = v_link[N-1][N];
  for (genvar c = 0; c < N; c++) begin : deskew
    if (c == N - 1) begin : pass
      assign out_row[32*c+:32] = p_link[N][c];
    end else begin : delay
      for (genvar j = 0; j < N - 1 - c; j++) begin : stage
        logic [31:0] q;
        if (j == 0) begin : load
          always_ff @(posedge clk) q <= p_link[N][c];
        end else begin : shift
          always_ff @(posedge clk) q <= stage[j-1].q;
        end
      end
      assign out_row[32*c+:32] = stage[N-2-c].q;
    end
  end

  // 4. Result FIFO.
  logic [32*N-1:0] fifo[FIFO_ROWS];
  logic [PTR_BITS-1:0] rd_q, wr_q;
  assign res_valid = count_q != 0;
  assign res_row = fifo[rd_q];

  function automatic logic [PTR_BITS-1:0] next_ptr(input logic [PTR_BITS-1:0] p);
    next_ptr = p == PTR_BITS'(FIFO_ROWS - 1) ? '0 : p + 1'b1;
  endfunction

  always_ff @(posedge clk) begin
    if (out_valid) fifo[wr_q] <= out_row;
    if (rst) begin
      rd_q <= '0;
      wr_q <= '0;
      count_q <= '0;
      reserved_q <= '0;
      latch_wave_q <= '0;
    end else begin
      if (out_valid) wr_q <= next_ptr(wr_q);
      if (pop) rd_q <= next_ptr(rd_q);
      count_q <= count_q + COUNT_BITS'(out_valid) - COUNT_BITS'(pop);
      reserved_q <= reserved_q + COUNT_BITS'(push) - COUNT_BITS'(pop);
      if (push && lhs_latch) latch_wave_q <= WAVE_BITS'(2 * N - 2);
      else if (latch_wave_q != 0) latch_wave_q <= latch_wave_q - 1'b1;
    end
  end
endmodule
