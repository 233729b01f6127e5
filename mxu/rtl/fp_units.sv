// Test top for the arithmetic units alone (tests/test_mxu_rtl_fp.cpp checks
// them against the host's IEEE float over millions of operand pairs).
`timescale 1ns / 1ps

module fp_units (
    input  logic [15:0] mul_a,
    input  logic [15:0] mul_b,
    output logic [31:0] mul_p,
    input  logic [31:0] add_a,
    input  logic [31:0] add_b,
    output logic [31:0] add_y
);
  bf16_mul mul (.a(mul_a), .b(mul_b), .p(mul_p));
  f32_add add (.a(add_a), .b(add_b), .y(add_y));
endmodule
