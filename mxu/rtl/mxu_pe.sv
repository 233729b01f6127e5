// One processing element of the weight-stationary systolic array.
//
// Contract (one clock edge):
//  * weights: w_shift copies w_in (the shadow weight of the PE above, or the
//    loaded row for the top row) into w_shadow_q. A valid operand carrying the
//    latch flag copies w_shadow_q into w_active_q and is itself multiplied by
//    the shadow weight, so every operand of a latching push and after it uses
//    the new weights, every operand before it the old ones.
//  * operands: a valid operand a_in multiplies the weight and adds to psum_in:
//    psum_q = psum_in + bf16(a_in) * bf16(w) in f32 (bf16_mul, f32_add); a_in,
//    its valid and latch flags move right (a_q, a_valid_q, a_latch_q). An
//    invalid slot leaves zeros, so waveforms show only real operands.
`timescale 1ns / 1ps

module mxu_pe (
    input  logic        clk,
    input  logic        rst,
    input  logic        w_shift,
    input  logic [15:0] w_in,
    input  logic        a_valid_in,
    input  logic        a_latch_in,
    input  logic [15:0] a_in,
    input  logic [31:0] psum_in,
    output logic [15:0] w_shadow_q,
    output logic        a_valid_q,
    output logic        a_latch_q,
    output logic [15:0] a_q,
    output logic [31:0] psum_q
);
  logic [15:0] w_active_q;
  logic latch;
  logic [15:0] w;
  logic [31:0] product;
  logic [31:0] sum;

  assign latch = a_valid_in && a_latch_in;
  assign w = latch ? w_shadow_q : w_active_q;

  bf16_mul mul (.a(a_in), .b(w), .p(product));
  f32_add add (.a(psum_in), .b(product), .y(sum));

  always_ff @(posedge clk) begin
    if (w_shift) w_shadow_q <= w_in;
    if (latch) w_active_q <= w_shadow_q;
    if (rst) begin
      a_valid_q <= 1'b0;
      a_latch_q <= 1'b0;
      a_q <= '0;
      psum_q <= '0;
    end else begin
      a_valid_q <= a_valid_in;
      a_latch_q <= latch;
      a_q <= a_valid_in ? a_in : '0;
      psum_q <= a_valid_in ? sum : '0;
    end
  end
endmodule
