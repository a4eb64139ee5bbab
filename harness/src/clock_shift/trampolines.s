# The data page, then the code page of lockpick's clock shift (see trampoline.rs).
.intel_syntax noprefix
.text
.globl _start
_start:
mask:      .quad 0          # 0x00 clock ids moved
index:     .quad 0          # 0x08 the live slot, 0 or 1
slots:     .fill 64, 1, 0   # 0x10, 0x30 {sec, nsec, usec, unused}
orig_cgt:  .quad 0          # 0x50 the original clock_gettime (relocated) or its syscall stub
orig_gtod: .quad 0          # 0x58 the same for gettimeofday
orig_time: .quad 0          # 0x60 the same for time
.org 0x1000
# clock_gettime(id edi, ts rsi). At entry rsp = 8 mod 16; two pushes and 8 more keep the
# callee's entry at 8 mod 16 too.
clock_gettime:
    push rdi
    push rsi
    sub rsp, 8
    call qword ptr [rip + orig_cgt]
    add rsp, 8
    pop rsi
    pop rdi
    test eax, eax
    jne 9f
    cmp edi, 64
    jae 9f
    mov rdx, qword ptr [rip + mask]
    bt rdx, rdi
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    mov rax, qword ptr [rdx + 8]
    add rax, qword ptr [rsi + 8]
    mov rcx, qword ptr [rdx]
    add rcx, qword ptr [rsi]
    cmp rax, 1000000000
    jl 1f
    sub rax, 1000000000
    inc rcx
1:  mov qword ptr [rsi], rcx
    mov qword ptr [rsi + 8], rax
    xor eax, eax
9:  ret
.org 0x1080
# gettimeofday(tv rdi, tz rsi)
gettimeofday:
    push rdi
    push rsi
    sub rsp, 8
    call qword ptr [rip + orig_gtod]
    add rsp, 8
    pop rsi
    pop rdi
    test eax, eax
    jne 9f
    test rdi, rdi
    je 9f
    bt qword ptr [rip + mask], 0
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    mov rax, qword ptr [rdx + 16]
    add rax, qword ptr [rdi + 8]
    mov rcx, qword ptr [rdx]
    add rcx, qword ptr [rdi]
    cmp rax, 1000000
    jl 1f
    sub rax, 1000000
    inc rcx
1:  mov qword ptr [rdi], rcx
    mov qword ptr [rdi + 8], rax
    xor eax, eax
9:  ret
.org 0x1100
# time(tloc rdi)
time:
    push rdi
    call qword ptr [rip + orig_time]
    pop rdi
    cmp rax, -4095
    jae 9f
    bt qword ptr [rip + mask], 0
    jae 9f
    mov rcx, qword ptr [rip + index]
    shl rcx, 5
    lea rdx, [rip + slots]
    add rdx, rcx
    add rax, qword ptr [rdx]
    test rdi, rdi
    je 9f
    mov qword ptr [rdi], rax
9:  ret
.org 0x1180
# The system calls, for a vDSO function whose first instructions could not be relocated.
sys_clock_gettime:
    mov eax, 228
    syscall
    ret
.org 0x1190
sys_gettimeofday:
    mov eax, 96
    syscall
    ret
.org 0x11a0
sys_time:
    mov eax, 201
    syscall
    ret
.org 0x11b0
